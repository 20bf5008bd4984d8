import { describe, expect, it } from 'vitest';
import { cellText, plural, renderFields, renderTable } from './format.ts';

describe('renderTable', () => {
  it('pads columns to the widest cell and right-aligns numeric columns', () => {
    const text = renderTable(
      ['quest', 'name', 'points'],
      [
        [7, 'Daily', 1000],
        [12, 'Weekly check-in', 5],
      ],
    );
    expect(text.split('\n')).toEqual([
      'quest  name             points', //
      '    7  Daily              1000',
      '   12  Weekly check-in       5',
    ]);
  });

  it('renders only the header for no rows, and dashes for missing values', () => {
    expect(renderTable(['a', 'bb'], [])).toBe('a  bb');
    expect(renderTable(['a', 'b'], [[null, 'x']])).toBe('a  b\n-  x');
  });
});

describe('renderFields and cells', () => {
  it('aligns labels under a title', () => {
    expect(
      renderFields('Owner created', [
        ['id', 'own_1'],
        ['name', 'Acme'],
      ]),
    ).toBe('Owner created\n  id    own_1\n  name  Acme');
  });

  it('writes dates in ISO form and booleans as yes/no', () => {
    expect(cellText(new Date('2025-01-02T03:04:05Z'))).toBe('2025-01-02T03:04:05.000Z');
    expect(cellText(true)).toBe('yes');
    expect(cellText(false)).toBe('no');
    expect(cellText(undefined)).toBe('-');
  });

  it('pluralises with grouped digits', () => {
    expect(plural(1, 'quest')).toBe('1 quest');
    expect(plural(0, 'quest')).toBe('0 quests');
    expect(plural(1234567, 'payout')).toBe('1,234,567 payouts');
  });
});
