export * from './address.ts';
export * from './allocation.ts';
export * from './errors.ts';
export * from './ids.ts';
export * from './jobs.ts';
export * from './keys.ts';
export * from './partition.ts';
export * from './quest.ts';
