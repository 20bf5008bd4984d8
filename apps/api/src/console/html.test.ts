import { describe, expect, it } from 'vitest';
import { html, layout, raw } from './html.ts';

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
});
