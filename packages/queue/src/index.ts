export * from './connection.ts';
export * from './names.ts';
export * from './pool.ts';
export * from './producer.ts';
export * from './stats.ts';
export * from './replies.ts';
