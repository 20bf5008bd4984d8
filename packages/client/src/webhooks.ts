import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/**
 * Webhook signatures in the Standard Webhooks format (https://www.standardwebhooks.com): headers
 * `webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>`), a secret
 * `whsec_<base64>`. Verified by the format's own reference library, which compares in constant time
 * and refuses timestamps more than 5 minutes away. The service sends no webhooks yet; the format is
 * fixed, so receivers can be written against it now.
 */

export { WebhookVerificationError };

/** Fetch's Headers, or a Node `IncomingHttpHeaders`-like record. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  const set = (name: string, value: string | string[] | undefined | null) => {
    if (value === undefined || value === null) return;
    // A repeated header arrives as an array: the signature header lists its signatures space-separated.
    out[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  };
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).forEach === 'function') {
    (headers as Headers).forEach((value, name) => {
      set(name, value);
    });
  } else {
    for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) set(name, value);
  }
  return out;
}

/**
 * Check a delivery's signature and return its JSON payload; throws WebhookVerificationError when
 * the signature, the headers or the timestamp do not hold. `body` must be the raw request body,
 * byte for byte (not a re-serialized object).
 */
export function verify<T = unknown>(headers: WebhookHeaders, body: string | Uint8Array, secret: string): T {
  const payload = typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: true }).decode(body);
  return new Webhook(secret).verify(payload, headerRecord(headers)) as T;
}

export const webhooks = { verify };
