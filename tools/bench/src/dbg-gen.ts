import { createServer } from 'node:http';
import { runOpenLoop } from './open-loop.ts';
const srv = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('{"payout":{"id":"pay_x"}}'));
}).listen(39113, '127.0.0.1');
await new Promise((r) => srv.once('listening', r));
for (const rate of [50, 200, 1000]) {
  const l = await runOpenLoop({
    baseUrl: 'http://127.0.0.1:39113',
    apiKey: 'k',
    rate,
    durationS: 2,
    connections: 64,
    pick: () => ({ questId: 1, address: '0x' }),
  });
  console.log(rate, l.ok200, 'p50', l.latency.p50.toFixed(2), 'p99', l.latency.p99.toFixed(2));
}
srv.close();
