export * from './connection.ts';
export * from './consumer.ts';
export * from './names.ts';
export * from './partitions.ts';
export * from './pool.ts';
export * from './producer.ts';
export * from './stats.ts';
export * from './replies.ts';
