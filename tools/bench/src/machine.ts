import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Redis } from 'ioredis';
import type { Sql } from '@quest/db';

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  memoryGb: number;
  kernel: string;
  node: string;
  postgres: string;
  postgresSettings: Record<string, string>;
  redis: string;
  redisSettings: Record<string, string>;
  autocannon: string;
}

function autocannonVersion(): string {
  try {
    const url = new URL(import.meta.resolve('autocannon/package.json'));
    return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

export async function machineInfo(sql: Sql, redis: Redis): Promise<MachineInfo> {
  const [{ version } = { version: '?' }] = await sql<{ version: string }[]>`select version()`;
  const settings = await sql<{ name: string; setting: string; unit: string | null }[]>`
    select name, setting, unit from pg_settings
    where name in ('max_connections', 'shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_wal_size', 'work_mem')`;
  const info = (await redis.info('server')) + (await redis.info('persistence'));
  const field = (k: string) => new RegExp(`^${k}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '?';
  const policy = (await redis.config('GET', 'maxmemory-policy')) as string[];
  return {
    nproc: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres: version.split(' on ')[0] ?? version,
    postgresSettings: Object.fromEntries(settings.map((s) => [s.name, s.unit ? `${s.setting} ${s.unit}` : s.setting])),
    redis: field('redis_version'),
    redisSettings: { aof_enabled: field('aof_enabled'), 'maxmemory-policy': policy[1] ?? '?' },
    autocannon: autocannonVersion(),
  };
}

export function formatMachine(m: MachineInfo): string {
  const pg = Object.entries(m.postgresSettings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return [
    `machine: ${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGb} GB RAM, ${m.kernel}`,
    `node ${m.node}; ${m.postgres} (${pg}); Redis ${m.redis} (aof=${m.redisSettings.aof_enabled}, maxmemory-policy=${m.redisSettings['maxmemory-policy']}); autocannon ${m.autocannon}`,
  ].join('\n');
}
