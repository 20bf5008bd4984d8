export * from './connection.ts';
export * from './names.ts';
export * from './partitions.ts';
export * from './allocator.ts';
export * from './producer.ts';
export * from './stats.ts';
export * from './replies.ts';
export * from './webhooks.ts';
