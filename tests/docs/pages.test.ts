import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { REPO_ROOT } from '@quest/testing/processes';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../apps/admin/src/program.ts';
import { anchors, codeBlocks, PAGES, readPage } from './markdown.ts';

/**
 * The README and docs/ as a reader meets them: shell blocks are either run by
 * tests/docs/commands.test.ts (fenced `sh`) or say why not (fenced `shell`, first line
 * `# not run by the docs test: <reason>`), and every relative link leads somewhere.
 */

const NOT_RUN = /^# not run by the docs test: \S.{9,}/;

describe('README.md and docs/', () => {
  it('keeps the README to one screenful of pages: at most 250 lines', () => {
    expect(readPage('README.md').split('\n').length).toBeLessThanOrEqual(250);
  });

  it('fences every code block with its language, shell blocks as sh (run) or shell (with the reason it is not)', () => {
    const problems: string[] = [];
    for (const block of PAGES.flatMap(codeBlocks)) {
      const where = `${block.page}:${block.line}`;
      if (block.lang === '') problems.push(`${where}: no language on the fence`);
      else if (['bash', 'zsh', 'console', 'shell-session'].includes(block.lang))
        problems.push(`${where}: \`\`\`${block.lang}: use sh (run by the docs test) or shell (not run, with a reason)`);
      else if (block.lang === 'shell' && !NOT_RUN.test(block.body))
        problems.push(`${where}: a shell block starts with "# not run by the docs test: <reason>"`);
    }
    expect(problems).toEqual([]);
  });

  it('names only quest-admin commands and subcommands that exist', () => {
    // The program as the CLI builds it; nothing runs, so the context only needs what option texts read.
    const ctx = { json: false, config: { API_BASE_URL: 'http://127.0.0.1:3000' }, origin: { env: {}, cwd: REPO_ROOT } };
    const program = buildProgram(ctx as unknown as Parameters<typeof buildProgram>[0], () => {});
    const known = new Map(program.commands.map((c) => [c.name(), new Set(c.commands.map((s) => s.name()))]));
    const wrong: string[] = [];
    for (const page of PAGES) {
      // Commands as the docs show them: each line of a shell block, each code span of the prose (which
      // may wrap a line).
      let fenced = false;
      const outside: string[] = [];
      for (const line of readPage(page).split('\n')) {
        if (/^\s*```/.test(line)) fenced = !fenced;
        else if (!fenced) outside.push(line);
      }
      const prose = outside.join(' ');
      const spans = [...prose.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\s+/g, ' '));
      const lines = codeBlocks(page)
        .filter((b) => b.lang === 'sh' || b.lang === 'shell')
        .flatMap((b) => b.body.split('\n'));
      const code = [...spans, ...lines].join('\n');
      for (const [text, command, sub] of code.matchAll(/quest-admin ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g)) {
        const subs = known.get(command!);
        if (!subs || (subs.size > 0 && sub !== undefined && !subs.has(sub))) wrong.push(`${page}: ${text}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      for (const [, target] of readPage(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? page : normalize(join(dirname(page), path));
        if (!existsSync(join(REPO_ROOT, file))) broken.push(`${page}: ${target} (no file ${file})`);
        else if (anchor && file.endsWith('.md') && !anchors(file).has(anchor)) broken.push(`${page}: ${target} (no heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
