import { DomainError } from '@quest/domain';
import type { FastifyRequest } from 'fastify';

/** A posted form's fields (application/x-www-form-urlencoded, parsed by @fastify/formbody). */
export type Form = Record<string, string | undefined>;

export const formOf = (request: FastifyRequest): Form => (request.body ?? {}) as Form;

/** A field, trimmed; '' when absent. */
export const field = (form: Form, name: string): string => (typeof form[name] === 'string' ? form[name].trim() : '');

/** A whole number from a form field, or a 400 naming the field. */
export function intField(form: Form, name: string, label: string): number {
  const value = field(form, name);
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new DomainError('VALIDATION_FAILED', `${label} must be a whole number.`);
  return n;
}

/** A datetime-local field (taken as UTC) or an ISO 8601 timestamp. */
export function dateField(form: Form, name: string, label: string): Date {
  const value = field(form, name);
  const d = new Date(/Z$|[+-]\d\d:\d\d$/.test(value) ? value : `${value}Z`);
  if (value === '' || Number.isNaN(d.getTime())) throw new DomainError('VALIDATION_FAILED', `${label} must be a date and time.`);
  return d;
}

/** A time as a datetime-local field's value (UTC, to the minute). */
export const localValue = (d: Date) => d.toISOString().slice(0, 16);
