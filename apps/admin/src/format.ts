/** Plain-text rendering for the CLI's human output (the JSON output needs none of this). */

export type Cell = string | number | boolean | null | undefined | Date;

export function cellText(value: Cell): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value);
}

/** Columns padded to their widest cell; numbers right-aligned. */
export function renderTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => headers.map((_, i) => cellText(row[i])));
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((row) => typeof row[i] === 'number'));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((row) => row[i]!.length)));
  const line = (cells: readonly string[], header: boolean) =>
    cells
      .map((cell, i) => (numeric[i] && !header ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers, true), ...text.map((row) => line(row, false))].join('\n');
}

/** `label  value` pairs, labels aligned, indented under a title. */
export function renderFields(title: string, fields: readonly (readonly [string, Cell])[]): string {
  const width = Math.max(0, ...fields.map(([label]) => label.length));
  return [title, ...fields.map(([label, value]) => `  ${label.padEnd(width)}  ${cellText(value)}`)].join('\n');
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}
