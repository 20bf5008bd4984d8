import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseTrustProxy, trustProxyVar } from './trust-proxy.ts';

describe('TRUST_PROXY', () => {
  const schema = z.object({ TRUST_PROXY: trustProxyVar() });
  const parse = (value: string | undefined) => schema.safeParse({ TRUST_PROXY: value });

  it('takes the boolean words, unset and empty as false', () => {
    for (const [text, value] of [
      ['true', true],
      ['YES', true],
      ['on', true],
      ['false', false],
      ['no', false],
      ['0', false],
      ['', false],
      [undefined, false],
    ] as const)
      expect(parse(text).data?.TRUST_PROXY, String(text)).toBe(value);
  });

  it('refuses a hop count, which cannot tell a proxy from a client writing the header itself', () => {
    for (const hops of ['1', '2', ' 3 ']) expect(parse(hops).error?.issues[0]?.message, hops).toMatch(/^a hop count cannot tell/);
  });

  it("takes a list of the proxies' addresses, CIDR ranges and proxy-addr's range names", () => {
    expect(parse('10.0.0.0/8, 192.168.1.7,loopback,fd00::/8,::1').data?.TRUST_PROXY).toEqual([
      '10.0.0.0/8',
      '192.168.1.7',
      'loopback',
      'fd00::/8',
      '::1',
    ]);
  });

  it('refuses anything else, naming the entry', () => {
    for (const bad of ['maybe', '10.0.0.0/33', '::1/129', '10.0.0.1,', 'proxy.internal', '10.0.0.1/8/1', '1.2.3.4/x'])
      expect(parseTrustProxy(bad).ok, bad).toBe(false);
    expect(parse('10.0.0.1,nope').error?.issues[0]?.message).toBe(
      '"nope" is not an IP address, a CIDR range, loopback, linklocal or uniquelocal',
    );
  });
});
