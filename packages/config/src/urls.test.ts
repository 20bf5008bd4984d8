import { describe, expect, it } from 'vitest';
import { databaseName, describeUrl, firstAddress, splitUrl, withAddress, withDatabase } from './urls.ts';

describe('withAddress', () => {
  it('keeps the password, the Redis index and the options', () => {
    expect(withAddress('redis://:s3cret@127.0.0.1:6379/7', '127.0.0.1', 41234)).toBe('redis://:s3cret@127.0.0.1:41234/7');
    expect(withAddress('rediss://user:p%40ss@cache.internal:6380/3?family=6', '127.0.0.1', 5)).toBe(
      'rediss://user:p%40ss@127.0.0.1:5/3?family=6',
    );
  });

  it('replaces every host of a multi-host PostgreSQL URL and keeps the rest', () => {
    expect(withAddress('postgres://u:p@h1:5432,h2:5433/quests?target_session_attrs=read-write', '127.0.0.1', 9)).toBe(
      'postgres://u:p@127.0.0.1:9/quests?target_session_attrs=read-write',
    );
  });

  it('brackets an IPv6 host', () => {
    expect(withAddress('redis://[::1]:6379/2', '::1', 7000)).toBe('redis://[::1]:7000/2');
  });
});

describe('withDatabase', () => {
  it('keeps credentials, hosts and options', () => {
    expect(withDatabase('postgres://u:p%40x@db:5432/postgres?sslmode=require', 'qr_test_1')).toBe(
      'postgres://u:p%40x@db:5432/qr_test_1?sslmode=require',
    );
    expect(withDatabase('postgresql://u@h1:5432,h2:5432/a?target_session_attrs=read-write', 'b')).toBe(
      'postgresql://u@h1:5432,h2:5432/b?target_session_attrs=read-write',
    );
    expect(withDatabase('postgres://postgres@127.0.0.1:5432', 'x')).toBe('postgres://postgres@127.0.0.1:5432/x');
    expect(withDatabase('postgres:///old?host=/var/run/postgresql', 'new')).toBe('postgres:///new?host=/var/run/postgresql');
  });

  it('round-trips the name through databaseName', () => {
    const url = withDatabase('postgres://h/x', 'we"ird name');
    expect(databaseName(url)).toBe('we"ird name');
  });
});

describe('firstAddress and describeUrl', () => {
  it('finds the first host and port', () => {
    expect(firstAddress('redis://:pw@cache:6380/7', 6379)).toEqual({ host: 'cache', port: 6380 });
    expect(firstAddress('redis://cache', 6379)).toEqual({ host: 'cache', port: 6379 });
    expect(firstAddress('redis://[::1]:7000', 6379)).toEqual({ host: '::1', port: 7000 });
    expect(firstAddress('postgres://u@h1:5433,h2:5434/db', 5432)).toEqual({ host: 'h1', port: 5433 });
  });

  it('never shows the credentials or options', () => {
    expect(describeUrl('redis://:s3cret@cache:6380/7?x=1', '?')).toBe('cache:6380/7');
    expect(describeUrl('postgres://u:secret@h1:1,h2:2/db', '?')).toBe('h1:1,h2:2/db');
    expect(describeUrl('nonsense', 'the configured database')).toBe('the configured database');
  });

  it('refuses what is not a URL', () => {
    expect(() => splitUrl('127.0.0.1:6379')).toThrow();
  });
});
