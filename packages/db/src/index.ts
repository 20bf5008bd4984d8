export * from './client.ts';
export * from './flags.ts';
export * from './ledger.ts';
export * from './lifecycle.ts';
export * from './reads.ts';
export * from './observe.ts';
export * from './payouts.ts';
export * from './status.ts';
