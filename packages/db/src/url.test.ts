import { describe, expect, it } from 'vitest';
import { parseDatabaseUrl } from './url.ts';

describe('parseDatabaseUrl', () => {
  it('reads a single-host URL', () => {
    const u = parseDatabaseUrl('postgres://postgres:secret@db.internal:6432/quests');
    expect(u.hosts).toEqual([{ host: 'db.internal', port: 6432 }]);
    expect(u.database).toBe('quests');
    expect(u.describe()).toBe('db.internal:6432/quests');
    expect(u.withDatabase('postgres')).toBe('postgres://postgres:secret@db.internal:6432/postgres');
  });

  it('reads a multi-host URL, keeping its hosts and parameters when the database changes', () => {
    const url = 'postgresql://app:p%40ss@pg1:5432,pg2,[::1]:5433/quest_rewards?target_session_attrs=read-write&sslmode=require';
    const u = parseDatabaseUrl(url);
    expect(u.hosts).toEqual([
      { host: 'pg1', port: 5432 },
      { host: 'pg2', port: 5432 },
      { host: '[::1]', port: 5433 },
    ]);
    expect(u.database).toBe('quest_rewards');
    expect(u.describe()).toBe('pg1:5432,pg2:5432,[::1]:5433/quest_rewards');
    expect(u.describe()).not.toContain('p%40ss');
    expect(u.withDatabase('postgres')).toBe(
      'postgresql://app:p%40ss@pg1:5432,pg2,[::1]:5433/postgres?target_session_attrs=read-write&sslmode=require',
    );
  });

  it('reads a URL without a database or port', () => {
    const u = parseDatabaseUrl('postgres://h1,h2');
    expect(u.database).toBe('');
    expect(u.hosts.map((h) => h.port)).toEqual([5432, 5432]);
    expect(u.withDatabase('x')).toBe('postgres://h1,h2/x');
  });
});
