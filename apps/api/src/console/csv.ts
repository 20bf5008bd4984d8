import { DomainError, passAddressLowerSchema } from '@quest/domain';

/**
 * A credit CSV as the console takes it: one `address,points` row per line (a header line naming
 * `address` is skipped, as are blank lines; quotes around a field are allowed). Any bad row refuses
 * the whole file, naming the first few lines, before anything is credited: a half-read file is
 * worse than none.
 */
export function parseCreditCsv(text: string): { address: `0x${string}`; points: number }[] {
  const items: { address: `0x${string}`; points: number }[] = [];
  const bad: { line: number; reason: string }[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const fields = line.split(',').map((f) =>
      f
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .trim(),
    );
    if (i === 0 && /address/i.test(fields[0] ?? '')) return;
    if (fields.length !== 2) {
      bad.push({ line: i + 1, reason: 'expected two fields: address,points' });
      return;
    }
    const address = passAddressLowerSchema.safeParse(fields[0]);
    if (!address.success) {
      bad.push({ line: i + 1, reason: 'the address is not 0x followed by 40 hexadecimal digits' });
      return;
    }
    const points = Number(fields[1]);
    if (!/^\d+$/.test(fields[1]!) || !Number.isSafeInteger(points) || points < 1) {
      bad.push({ line: i + 1, reason: 'points must be a whole number of at least 1' });
      return;
    }
    items.push({ address: address.data, points });
  });
  if (bad.length > 0) {
    const first = bad
      .slice(0, 5)
      .map((b) => `line ${b.line}: ${b.reason}`)
      .join('; ');
    throw new DomainError(
      'VALIDATION_FAILED',
      `The file has ${bad.length} bad row${bad.length === 1 ? '' : 's'} (${first}${bad.length > 5 ? '; …' : ''}); nothing was credited.`,
      bad.slice(0, 100),
    );
  }
  if (items.length === 0) throw new DomainError('VALIDATION_FAILED', 'The file has no rows to credit.');
  return items;
}
