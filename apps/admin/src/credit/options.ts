import { InvalidArgumentError } from 'commander';

/** `quest-admin credit`'s limits and defaults, and its option parsers. */

export const DEFAULT_BATCH_SIZE = 5000;
export const MAX_BATCH_SIZE = 10_000;
/** Batches accepted by the service and not yet fully answered, at most. */
export const DEFAULT_CONCURRENCY = 4;
export const MAX_CONCURRENCY = 32;
export const DEFAULT_STALL_TIMEOUT_SECONDS = 60;
export const DEFAULT_STALL_TRIES = 3;

export function parseBatchSize(value: string): number {
  const text = value.trim();
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= 1 && n <= MAX_BATCH_SIZE)) throw new InvalidArgumentError(`Expected an integer from 1 to ${MAX_BATCH_SIZE}.`);
  return n;
}

export function parseBoundedInt(value: string, name: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max)
    throw new InvalidArgumentError(`${name} takes a whole number from ${min} to ${max}`);
  return Number(value);
}

export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new InvalidArgumentError('Expected an http:// or https:// URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new InvalidArgumentError('Expected an http:// or https:// URL.');
  if (url.search || url.hash) throw new InvalidArgumentError('Expected a base URL without a query or fragment.');
  return url.toString().replace(/\/+$/, '');
}
