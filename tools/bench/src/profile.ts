import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { markdownTable } from './stats.ts';

/**
 * Summaries of V8 .cpuprofile files (node --cpu-prof): self time per function and per area
 * (our packages, each dependency, Node internals, GC, idle). Self time of a node = the sum of the
 * time deltas of the samples that landed in it.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  area: string;
  ms: number;
}

/** Which part of the system a script URL belongs to. */
export function areaOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'program (native/V8)';
    return functionName || 'native';
  }
  if (url.startsWith('node:')) return 'node internals';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  // A bundle, or a chunk of quest-admin's split one (dist/chunks/, dist/bench-*/chunks/).
  if (/\/build-[^/]+\/bin\/[^/]+\.mjs$|\/dist\/(?:[^/]+\/)*[^/]+\.mjs$/.test(url)) return 'our code (bundled apps + @quest/*)';
  const m = /\/(packages|apps|tools)\/([^/]+)\//.exec(url);
  if (m) return `${m[1]}/${m[2]}`;
  return url.replace(/^file:\/\//, '');
}

/** A time window on CLOCK_MONOTONIC in µs (V8 profile timestamps and process.hrtime share that clock on Linux). */
export interface Window {
  label: string;
  fromUs: number;
  toUs: number;
}

export interface SelfTimes {
  total: number;
  byFunction: SelfTime[];
  byArea: SelfTime[];
  /** Self time charged to the nearest calling frame that belongs to a package (so socket writes count for postgres/ioredis). */
  byCaller: SelfTime[];
}

const isPackageFrame = (url: string) => url !== '' && !url.startsWith('node:');

export function selfTimes(profile: CpuProfile, windows?: readonly Window[]): SelfTimes {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const perNode = new Map<number, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    if (windows?.length && !windows.some((w) => t >= w.fromUs && t <= w.toUs)) continue;
    const id = profile.samples[i]!;
    perNode.set(id, (perNode.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const callerArea = (id: number): string | undefined => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)?.callFrame;
      if (f && isPackageFrame(f.url)) return areaOf(f.url, f.functionName);
    }
    return undefined;
  };
  const fn = new Map<string, SelfTime>();
  const area = new Map<string, SelfTime>();
  const caller = new Map<string, SelfTime>();
  let total = 0;
  for (const [id, ms] of perNode) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const a = areaOf(url, functionName);
    const ca = a === 'idle' || a === 'GC' || a === 'program (native/V8)' ? a : (callerArea(id) ?? a);
    const cr = caller.get(ca) ?? { name: ca, area: ca, ms: 0 };
    cr.ms += ms;
    caller.set(ca, cr);
    const short = url
      ? `${url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(packages|apps|tools)\//, '$1/')}:${lineNumber + 1}`
      : '';
    const key = `${functionName || '(anonymous)'} ${short}`.trim();
    const f = fn.get(key) ?? { name: key, area: a, ms: 0 };
    f.ms += ms;
    fn.set(key, f);
    const ar = area.get(a) ?? { name: a, area: a, ms: 0 };
    ar.ms += ms;
    area.set(a, ar);
    total += ms;
  }
  const sort = (m: Map<string, SelfTime>) => [...m.values()].sort((x, y) => y.ms - x.ms);
  return { total, byFunction: sort(fn), byArea: sort(area), byCaller: sort(caller) };
}

export function formatSelfTimes(profile: CpuProfile, top = 25, windows?: readonly Window[]): string {
  const { total, byFunction, byArea, byCaller } = selfTimes(profile, windows);
  const idle = byArea.find((a) => a.name === 'idle')?.ms ?? 0;
  const busy = total - idle;
  const pct = (ms: number) => `${((100 * ms) / busy).toFixed(1)}%`;
  // Self time by area, and by package with what it called: the 15 busiest of each.
  const busiest = (columns: string[], rows: readonly { name: string; ms: number }[]) =>
    markdownTable(
      columns,
      rows
        .filter((a) => a.name !== 'idle')
        .slice(0, 15)
        .map((a) => [a.name, a.ms.toFixed(0), pct(a.ms)]),
      ['l', 'r', 'r'],
    );
  const areas = busiest(['area', 'self ms', '% of busy'], byArea);
  const callers = busiest(['package (incl. the Node internals and native calls it made)', 'ms', '% of busy'], byCaller);
  const fns = markdownTable(
    ['function', 'area', 'self ms', '% of busy'],
    byFunction
      .filter((f) => f.area !== 'idle')
      .slice(0, top)
      .map((f) => [f.name.slice(0, 90), f.area, f.ms.toFixed(0), pct(f.ms)]),
    ['l', 'l', 'r', 'r'],
  );
  const scope = windows?.length
    ? `within ${windows.length} measured window(s)`
    : `whole process life (${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s)`;
  return `${scope}: busy ${(busy / 1000).toFixed(1)} s, idle ${(idle / 1000).toFixed(1)} s\n\n${callers}\n\n${areas}\n\n${fns}`;
}

/** Summarise the biggest main-thread profile of each process in a --cpu-prof directory. */
export function summarizeProfileDir(dir: string, top = 25, windows?: readonly Window[]): string | undefined {
  if (!existsSync(dir)) return undefined;
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(dir, f));
  if (!files.length) return undefined;
  // CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile: keep the largest file per pid (the main thread).
  const byPid = new Map<string, string>();
  for (const f of files) {
    const pid = f.split('.').at(-4) ?? f;
    const cur = byPid.get(pid);
    if (!cur || statSync(f).size > statSync(cur).size) byPid.set(pid, f);
  }
  return [...byPid.values()]
    .map((f) => `#### ${f}\n${formatSelfTimes(JSON.parse(readFileSync(f, 'utf8')) as CpuProfile, top, windows)}`)
    .join('\n\n');
}
