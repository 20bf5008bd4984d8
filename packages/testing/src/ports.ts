import { createServer } from 'node:net';

/**
 * A loopback TCP port nothing listens on right now: the OS picks one for a throwaway server,
 * which is closed again before the port is handed out. Another process may still take it in
 * between; the servers started here fail fast when that happens.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
