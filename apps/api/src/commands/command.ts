import type { Feature } from '@quest/db';
import type { z } from 'zod';
import type { Answer } from './answer.ts';

/** Who a command runs for, once the boundary has authorised the caller. */
export interface CommandContext {
  ownerId: string;
  requestId: string;
}

/**
 * One kind of write command, as the boundary (boundary.ts) runs it: every field is a check the
 * boundary makes for every entry point, so no caller can forget one.
 */
export interface Command<S extends z.ZodType, B> {
  /** The input, validated here whichever entry point parsed it before (a console form is not a route schema). */
  input: S;
  /** The feature switch that must be on; null: no switch governs it (say why where it is declared). */
  flag: Feature | null;
  /** The quest it acts on, authorised as the caller's; null: it acts on the owner's own account. */
  quest(input: z.output<S>): number | null;
  /** Items charged to the owner's rate budget (RATE_LIMIT_OWNER_ITEMS_*); 0: not charged. */
  cost(input: z.output<S>): number;
  /** Refusals that depend on the input and configuration alone (size limits), before anything is charged. */
  check?(input: z.output<S>): void;
  run(ctx: CommandContext, input: z.output<S>): Promise<Answer<B>>;
}
