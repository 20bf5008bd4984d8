import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { REPO_ROOT } from '@quest/testing/processes';
import { describe, expect, it } from 'vitest';
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
