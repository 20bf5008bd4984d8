export {
  MIN_TTL_HEARTBEATS,
  POOL_DEFAULTS,
  type PartitionPoolOptions,
  type PoolBeat,
  type PoolTiming,
  poolConfig,
} from './config.ts';
export { PartitionPool } from './pool.ts';
