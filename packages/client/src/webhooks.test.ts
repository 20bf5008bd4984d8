import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verify, WebhookVerificationError } from './webhooks.ts';

// A Standard Webhooks secret: whsec_ + base64 of the key bytes.
const SECRET = `whsec_${btoa('a key of thirty-two bytes, exact')}`;
const body = JSON.stringify({ type: 'payout.created', data: { id: 'pay_1', amount: 5 } });

function signed(payload = body, at = new Date(), secret = SECRET) {
  const id = 'msg_2Lh9KRb0pzN4LePd3XiA6pxL9Ei';
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, payload),
  };
}

describe('webhooks.verify', () => {
  it("returns the payload of a delivery signed with the secret, from Fetch's Headers or a Node header record", () => {
    const headers = signed();
    expect(verify(new Headers(headers), body, SECRET)).toEqual(JSON.parse(body));
    const nodeStyle = {
      'Webhook-Id': headers['webhook-id'],
      'webhook-timestamp': [headers['webhook-timestamp']],
      'webhook-signature': headers['webhook-signature'],
    };
    expect(verify(nodeStyle, new TextEncoder().encode(body), SECRET)).toEqual(JSON.parse(body));
  });

  it('accepts any of several signatures (a secret being rotated)', () => {
    const headers = signed();
    const other = signed(body, new Date(), `whsec_${btoa('another key, thirty-two bytes!!!')}`)['webhook-signature'];
    expect(verify({ ...headers, 'webhook-signature': `${other} ${headers['webhook-signature']}` }, body, SECRET)).toEqual(
      JSON.parse(body),
    );
  });

  it('refuses a changed body, another secret, a stale timestamp and missing headers', () => {
    const headers = signed();
    const refused = (h: Record<string, string>, b: string, s = SECRET) =>
      expect(() => verify(h, b, s)).toThrow(WebhookVerificationError);
    refused(headers, body.replace('5', '50'));
    refused(headers, body, `whsec_${btoa('not the key that signed, 32 bytes')}`);
    refused(signed(body, new Date(Date.now() - 10 * 60_000)), body);
    refused({ 'webhook-id': headers['webhook-id'] }, body);
  });
});
