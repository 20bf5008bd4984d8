import { describe, expect, it } from 'vitest';
import { consumerConnectionOptions } from './connection.ts';

describe('consumerConnectionOptions', () => {
  it('keeps the credentials, the database index and the options of the URL', () => {
    expect(consumerConnectionOptions('redis://user:p%40ss@cache:6380/7?family=6&connectionName=api')).toMatchObject({
      host: 'cache',
      port: 6380,
      username: 'user',
      password: 'p@ss',
      db: 7,
      family: 6,
      connectionName: 'api',
    });
  });

  it('takes the index from ?db= when the path has none, and TLS from rediss:', () => {
    expect(consumerConnectionOptions('rediss://:pw@[::1]?db=3')).toMatchObject({
      host: '::1',
      port: 6379,
      password: 'pw',
      db: 3,
      tls: {},
    });
  });
});
