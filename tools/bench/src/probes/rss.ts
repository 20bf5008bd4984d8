import { readFileSync } from 'node:fs';
import type { Service } from '../services.ts';

/** Resident set size now and its high-water mark, in MB, from /proc/<pid>/status. */
export function readRss(pid: number): { rssMb: number; hwmMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Samples VmRSS of the given processes every `everyMs`; stop() returns each one's peak. */
export function sampleRss(services: readonly Service[], everyMs = 200) {
  const peak = new Map<string, { pid: number; peakRssMb: number; hwmMb: number; samples: number }>();
  const tick = () => {
    for (const s of services) {
      const r = readRss(s.pid);
      if (!r) continue;
      const cur = peak.get(s.name) ?? { pid: s.pid, peakRssMb: 0, hwmMb: 0, samples: 0 };
      cur.peakRssMb = Math.max(cur.peakRssMb, r.rssMb);
      cur.hwmMb = Math.max(cur.hwmMb, r.hwmMb);
      cur.samples++;
      peak.set(s.name, cur);
    }
  };
  tick();
  const timer = setInterval(tick, everyMs);
  return {
    stop() {
      clearInterval(timer);
      tick();
      return Object.fromEntries(peak);
    },
  };
}
