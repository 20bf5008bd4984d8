import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@quest/testing/processes';

/** The pages a reader gets: the README, then every page under docs/. */
export const PAGES = [
  'README.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

export const readPage = (page: string) => readFileSync(join(REPO_ROOT, page), 'utf8');

export interface CodeBlock {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's info string: `sh`, `shell`, `text`, `json`, … ('' when none). */
  lang: string;
  /** The block's lines, without the fences and without the indentation of the fence. */
  body: string;
}

/** Every fenced code block of a page (``` fences, possibly indented inside a list item). */
export function codeBlocks(page: string): CodeBlock[] {
  const lines = readPage(page).split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trimEnd() !== `${indent}\`\`\``; i++) body.push(lines[i]!.slice(indent.length));
    if (i === lines.length) throw new Error(`${page}:${start + 1}: code block never closed`);
    blocks.push({ page, line: start + 1, lang: open[2]!, body: body.join('\n') });
  }
  return blocks;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a page's headings, numbered as GitHub numbers repeated ones. */
export function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  let inFence = false;
  for (const line of readPage(page).split('\n')) {
    if (/^\s*```/.test(line)) inFence = !inFence;
    const heading = !inFence && /^#{1,6} (.+)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}
