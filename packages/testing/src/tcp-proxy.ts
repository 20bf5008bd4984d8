import { connect, createServer, type Socket } from 'node:net';

/**
 * A network fault between a client and one server, as an operator's network fails:
 * - `pass`: bytes flow as they come.
 * - `blackhole`: connections are accepted, and every byte (and FIN, and RST) is held both ways,
 *   for existing and new connections; nothing is dropped, nothing is closed. A heal (`pass` or
 *   `delay`) delivers what was held, in order, as TCP's retransmissions would once the path is
 *   back. A connection accepted during the blackhole reaches the server only after the heal (its
 *   SYN was "lost"); one whose client gave up before the heal never reaches it.
 * - `delay`: every chunk (and FIN / RST) is forwarded each way `ms` after it arrived, in order.
 * - `refuse`: new connections are reset as soon as they are accepted; existing ones keep working.
 *
 * The proxy terminates TCP on both sides, so the client's own TCP stack sees its bytes
 * acknowledged during a blackhole: a client that relies on TCP keepalive or TCP_USER_TIMEOUT to
 * notice a dead peer will not notice it here, only one with its own application-level deadlines.
 */
export type ProxyFault = { kind: 'pass' } | { kind: 'blackhole' } | { kind: 'delay'; ms: number } | { kind: 'refuse' };

export interface TcpFaultProxy {
  readonly port: number;
  readonly host: '127.0.0.1';
  /** `url` with its host:port replaced by the proxy's; credentials, path (database/db index) and query kept. */
  proxyUrl(url: string): string;
  /** Applies to existing and new connections. */
  setFault(f: ProxyFault): void;
  /** Reset (RST) every open connection now, both sides: one step of an RST storm. */
  resetAll(): void;
  /** Connections the proxy holds a socket of (client side or server side). */
  readonly openConnections: number;
  /**
   * What the proxy holds on its way to the server now, over every connection: bytes and FINs that
   * arrived from clients and were not passed on. During a blackhole, held = sent proves that
   * nothing got through (a test can wait for it instead of watching for absence over a window).
   */
  readonly heldToServer: { bytes: number; ends: number };
  close(): Promise<void>;
}

/** A direction pauses its source while it holds more than this (the receive window filling up). */
const HIGH_WATER = 1 << 20;

type Held = { at: number; data: Buffer } | { at: number; end: true } | { at: number; reset: true };

/** One direction of a connection: what arrived from `src` and is not yet written to `dst`. */
class Direction {
  private readonly held: Held[] = [];
  /** Bytes held, not yet written on (read by `TcpFaultProxy.heldToServer`). */
  heldBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  dst: Socket | undefined;
  private waitingDrain = false;

  constructor(
    /** Where the bytes come from (the server side exists only once the connection is opened). */
    public src: Socket | undefined,
    private readonly fault: () => ProxyFault,
  ) {}

  push(item: Held): void {
    this.held.push(item);
    if ('data' in item) this.heldBytes += item.data.length;
    this.pump();
  }

  /** FINs held, not yet passed on. */
  get heldEnds(): number {
    return this.held.filter((h) => 'end' in h).length;
  }

  /** Write whatever the fault lets through now; schedule the next delayed item. */
  pump = (): void => {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const fault = this.fault();
    const dst = this.dst;
    if (fault.kind !== 'blackhole' && dst) {
      while (this.held.length > 0) {
        const head = this.held[0]!;
        if (fault.kind === 'delay') {
          const wait = head.at + fault.ms - performance.now();
          if (wait > 0) {
            this.timer = setTimeout(this.pump, Math.ceil(wait));
            break;
          }
        }
        this.held.shift();
        if (dst.destroyed) continue;
        if ('data' in head) {
          this.heldBytes -= head.data.length;
          dst.write(head.data);
        } else if ('end' in head) {
          dst.end();
        } else {
          dst.resetAndDestroy();
        }
      }
    }
    this.flow();
  };

  /** Backpressure: stop reading while too much is held here or queued in the destination. */
  private flow(): void {
    const src = this.src;
    if (!src || src.destroyed) return;
    const queued = this.dst && !this.dst.destroyed ? this.dst.writableLength : 0;
    if (this.heldBytes + queued > HIGH_WATER) {
      src.pause();
      if (this.dst && !this.waitingDrain && queued > 0) {
        this.waitingDrain = true;
        this.dst.once('drain', () => {
          this.waitingDrain = false;
          this.pump();
        });
      }
    } else if (src.isPaused()) {
      src.resume();
    }
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.held.length = 0;
    this.heldBytes = 0;
  }
}

class Connection {
  upstream: Socket | undefined;
  readonly toServer: Direction;
  readonly toClient: Direction;

  constructor(
    readonly client: Socket,
    private readonly target: { host: string; port: number },
    fault: () => ProxyFault,
    private readonly done: (c: Connection) => void,
  ) {
    this.toServer = new Direction(client, fault);
    this.toClient = new Direction(undefined, fault);
    this.toClient.dst = client;
    client.setNoDelay(true);
    relay(client, this.toServer);
    client.on('close', () => this.settle());
  }

  /** Open the server side (the "SYN" gets through); what the client sent meanwhile follows it. */
  open(): void {
    if (this.upstream || this.client.destroyed) return;
    const upstream = connect({ host: this.target.host, port: this.target.port, allowHalfOpen: true, noDelay: true });
    this.upstream = upstream;
    this.toClient.src = upstream;
    relay(upstream, this.toClient);
    upstream.on('close', () => this.settle());
    this.toServer.dst = upstream;
    this.toServer.pump();
  }

  reset(): void {
    this.toServer.clear();
    this.toClient.clear();
    if (!this.client.destroyed) this.client.resetAndDestroy();
    if (this.upstream && !this.upstream.destroyed) this.upstream.resetAndDestroy();
    this.done(this);
  }

  private settle(): void {
    // A client that left before its connection reached the server never reaches it.
    if (this.client.destroyed && (!this.upstream || this.upstream.destroyed)) {
      this.toServer.clear();
      this.toClient.clear();
      this.done(this);
    }
  }
}

/** Feed `src`'s bytes, FIN and RST into `dir`, in the order they happen. */
function relay(src: Socket, dir: Direction): void {
  let ended = false;
  let failed = false;
  src.on('data', (data: Buffer) => dir.push({ at: performance.now(), data }));
  src.on('end', () => {
    ended = true;
    dir.push({ at: performance.now(), end: true });
  });
  src.on('error', () => {
    failed = true;
  });
  src.on('close', () => {
    // Closed without a FIN of its own (reset, refused, or destroyed): pass the abort on as an RST.
    if (failed || !ended) dir.push({ at: performance.now(), reset: true });
  });
}

/** Start a proxy on 127.0.0.1 (a free port) in front of `target`, passing everything through. */
export function startTcpFaultProxy(target: { host: string; port: number }): Promise<TcpFaultProxy> {
  let fault: ProxyFault = { kind: 'pass' };
  const getFault = () => fault;
  const conns = new Set<Connection>();
  const server = createServer({ allowHalfOpen: true }, (client) => {
    if (fault.kind === 'refuse') {
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    const conn = new Connection(client, target, getFault, (c) => conns.delete(c));
    conns.add(conn);
    if (fault.kind !== 'blackhole') conn.open();
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolve({
        port,
        host: '127.0.0.1',
        proxyUrl(url: string): string {
          const u = new URL(url);
          if (!u.host) throw new Error(`proxyUrl: no host:port in ${url}`);
          u.hostname = '127.0.0.1';
          u.port = String(port);
          return u.toString();
        },
        setFault(f: ProxyFault): void {
          fault = f;
          for (const c of conns) {
            if (f.kind !== 'blackhole') c.open();
            c.toServer.pump();
            c.toClient.pump();
          }
        },
        resetAll(): void {
          for (const c of [...conns]) c.reset();
        },
        get openConnections() {
          return conns.size;
        },
        get heldToServer() {
          let bytes = 0;
          let ends = 0;
          for (const c of conns) {
            bytes += c.toServer.heldBytes;
            ends += c.toServer.heldEnds;
          }
          return { bytes, ends };
        },
        close(): Promise<void> {
          return new Promise((done) => {
            server.close(() => done());
            for (const c of [...conns]) c.reset();
          });
        },
      });
    });
  });
}
