import { describe, expect, it } from 'vitest';
import { lineChart } from './charts.ts';
import { budgetBar, html, layout, raw } from './html.ts';

describe('html', () => {
  it('escapes every value; only markup made by the tag or raw passes through', () => {
    const name = `<script>alert("x")</script>&'`;
    const inner = html`<b>${name}</b>`;
    expect(html`<p title="${name}">${inner}${raw('<br>')}${[1, null, false, 'a<']}</p>`.text).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;"><b>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</b><br>1a&lt;</p>',
    );
  });

  it('lays a page out with no inline script, and the CSRF token only for a signed-in viewer', () => {
    const page = layout({ title: 'T <1>', body: html`<p>x</p>`, flash: '<i>' });
    expect(page).toContain('<title>T &lt;1&gt; · Quest Rewards console</title>');
    expect(page).toContain('&lt;i&gt;');
    expect(page).not.toContain('csrf-token');
    expect(page).not.toMatch(/<script>(?!<\/script>)/);
    const signedIn = layout({ title: 'T', body: html``, viewer: { kind: 'owner', name: 'Ann', csrfToken: 'tok' } });
    expect(signedIn).toContain('<meta name="csrf-token" content="tok">');
    expect(signedIn).toContain('name="_csrf" value="tok"');
  });

  it('labels the ends of a chart with different figures, a flat one with its one value', () => {
    const labels = (svg: string) => [...svg.matchAll(/<text[^>]*text-anchor="end"[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
    const flat = lineChart(
      [
        { x: 0, y: 100_000 },
        { x: 1, y: 100_000 },
      ],
      { label: 'flat', from: 'then', to: 'now' },
    ).text;
    const yLabels = labels(flat).filter((l) => l !== 'now');
    expect(yLabels).toEqual(['100k']);
    const near = lineChart(
      [
        { x: 0, y: 100_000 },
        { x: 1, y: 99_990 },
      ],
      { label: 'near', from: 'then', to: 'now' },
    ).text;
    expect(labels(near).filter((l) => l !== 'now')).toEqual(['100,000', '99,990']);
  });

  it('says 100 % and 0 % only when the budget is whole or empty', () => {
    expect(budgetBar(9_999, 10_000, 'b').text).toContain('(99.9%)');
    expect(budgetBar(1, 100_000, 'b').text).toContain('(0.1%)');
    expect(budgetBar(10_000, 10_000, 'b').text).toContain('(100%)');
    expect(budgetBar(0, 10_000, 'b').text).toContain('(0%)');
    expect(budgetBar(5_555, 10_000, 'b').text).toContain('(55.6%)');
  });
});
