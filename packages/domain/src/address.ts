// EIP-55 is a Keccak-256 of the lower-case hex: @noble/hashes' keccak_256 (what viem computes it
// with) loads in a few milliseconds, where viem/utils took about 0.3 s of every process's start-up.
import { keccak_256 } from '@noble/hashes/sha3';
import { z } from 'zod';

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ascii = new TextEncoder();

/**
 * Normalise a pass address to EIP-55 checksum form, whatever letter case it arrives in.
 * Returns null for anything that is not `0x` followed by 40 hex digits. Mixed-case input with a
 * wrong checksum is accepted and re-checksummed: the spec says the service converts any address
 * it receives, and clients commonly send lower-case addresses.
 */
export function toChecksumAddress(input: string): `0x${string}` | null {
  if (!HEX_ADDRESS.test(input)) return null;
  const hex = input.slice(2).toLowerCase();
  // Letter i is upper-cased when nibble i of the hash of the lower-case hex digits is 8 or more.
  const hash = keccak_256(ascii.encode(hex));
  let out = '0x';
  for (let i = 0; i < 40; i++) {
    const digit = hex[i]!;
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    out += nibble >= 8 && digit > '9' ? digit.toUpperCase() : digit;
  }
  return out as `0x${string}`;
}

/** Zod schema: accepts a hex address in any case and outputs its checksum form. */
export const passAddressSchema = z
  .string()
  .regex(HEX_ADDRESS, 'must be 0x followed by 40 hexadecimal digits')
  .transform((value) => toChecksumAddress(value) as `0x${string}`)
  .meta({
    description: 'Pass address: 0x followed by 40 hex digits, any case; answered in EIP-55 checksum form.',
    example: '0x52908400098527886E0F7030069857D2E4169EE7',
  });

/**
 * Zod schema for bulk input: the same validation, lower-cased instead of checksummed. Computing an
 * EIP-55 checksum is a Keccak-256 per address (~25 µs here, most of a 10,000-item batch's API
 * time); the ledger matches accounts case-insensitively and answers with their stored checksummed
 * form, so bulk paths need no checksum of their own.
 */
export const passAddressLowerSchema = z
  .string()
  .regex(HEX_ADDRESS, 'must be 0x followed by 40 hexadecimal digits')
  .transform((value) => value.toLowerCase() as `0x${string}`)
  .meta({
    description: 'Pass address: 0x followed by 40 hex digits, any case; answered in EIP-55 checksum form.',
    example: '0x52908400098527886E0F7030069857D2E4169EE7',
  });
