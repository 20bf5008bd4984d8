// Receive webhooks signed in the Standard Webhooks format, and refuse anything else. Usage:
//   npx tsx webhook-receiver.ts 8080 whsec_…
import { createServer } from 'node:http';
import { WebhookVerificationError, webhooks } from '@quest/client';

const [port = '8080', secret = ''] = process.argv.slice(2);

createServer(async (request, response) => {
  // The raw body, byte for byte: the signature covers exactly what was sent.
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    const event = webhooks.verify(request.headers, Buffer.concat(chunks), secret);
    console.log('verified', event);
    response.writeHead(204).end();
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    response.writeHead(400).end();
  }
}).listen(Number(port));
