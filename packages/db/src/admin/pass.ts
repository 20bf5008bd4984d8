import { toChecksumAddress } from '@quest/domain';
import { AdminError, type PassAddress } from './errors.ts';

/** A pass address in any letter case, in EIP-55 checksum form; INVALID_ADDRESS otherwise. */
export function requirePassAddress(input: string): PassAddress {
  const pass = toChecksumAddress(input.trim());
  if (!pass)
    throw new AdminError(
      'INVALID_ADDRESS',
      `invalid pass address ${JSON.stringify(input)}: expected 0x followed by 40 hex digits`,
    );
  return pass;
}
