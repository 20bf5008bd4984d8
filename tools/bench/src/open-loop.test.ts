import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOpenLoop } from './open-loop.ts';
import { sustainedStep } from './scenarios/open-loop.ts';
import { summarize } from './stats.ts';

describe('open-loop load', () => {
  let server: Server;
  let baseUrl = '';
  const seen: { path: string; key: string | undefined; body: string }[] = [];

  beforeAll(async () => {
    let n = 0;
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        seen.push({ path: req.url ?? '', key: req.headers['x-api-key'] as string | undefined, body });
        n++;
        // Every 10th request is refused, so the counts below tell 200s from the rest.
        if (n % 10 === 0) {
          res.writeHead(400, { 'content-type': 'application/json' }).end('{"code":"INSUFFICIENT_POINTS"}');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(`{"payout":{"id":"pay_${String(n).padStart(26, '0')}"}}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends rate × duration requests, each answered and counted by status, with the payout ids of the 200s', async () => {
    const result = await runOpenLoop({
      baseUrl,
      apiKey: 'key-1',
      rate: 200,
      durationS: 0.5,
      connections: 8,
      pick: () => ({ questId: 7, address: `0x${'a'.repeat(40)}` }),
    });
    expect(result.due).toBe(100);
    expect(result.sent).toBe(100);
    expect(result.received).toBe(100);
    expect(result.ok200).toBe(90);
    expect(result.otherStatus).toEqual({ 400: 10 });
    expect(new Set(result.payoutIds).size).toBe(90);
    expect(result.latency.count).toBe(90);
    expect(seen.every((s) => s.path === '/quests/7' && s.key === 'key-1' && JSON.parse(s.body).points === 1)).toBe(true);
  });

  it('counts a refused connection as an error, not an answer', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const result = await runOpenLoop({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'k',
      rate: 100,
      durationS: 0.1,
      connections: 2,
      pick: () => ({ questId: 1, address: `0x${'b'.repeat(40)}` }),
    });
    expect(result.sent).toBe(10);
    expect(result.ok200).toBe(0);
    expect(result.errors + result.timeouts).toBe(10);
  });
});

describe('sustainedStep', () => {
  const ok = { ok200: 100, due: 100, accepted202: 0, otherStatus: {}, errors: 0, timeouts: 0, latency: summarize([5, 10, 99]) };

  it('holds when every request was answered 200 within the p99 limit', () => {
    expect(sustainedStep(ok)).toEqual({ sustained: true, why: '' });
  });

  it('does not hold past the p99 limit, with a 202, a non-2xx or a request left unanswered', () => {
    expect(sustainedStep({ ...ok, latency: summarize([5, 10, 101]) }).why).toBe('p99 101 ms');
    expect(sustainedStep({ ...ok, ok200: 99, accepted202: 1 }).why).toBe('1 of 100 not answered 200, 1 × 202');
    expect(sustainedStep({ ...ok, ok200: 98, otherStatus: { 503: 2 } }).why).toBe('2 of 100 not answered 200, 2 non-2xx');
    expect(sustainedStep({ ...ok, ok200: 97, errors: 2, timeouts: 1 }).why).toBe(
      '3 of 100 not answered 200, 2 errors, 1 timeouts',
    );
    expect(sustainedStep({ ...ok, latency: summarize([]) }).sustained).toBe(false);
  });
});
