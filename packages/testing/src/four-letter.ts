import { connect } from 'node:net';

/** Sends a ZooKeeper four-letter-word command (`ruok`, `srvr`, `mntr`...) and returns the reply. */
export function fourLetterWord(port: number, word: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = connect({ host: '127.0.0.1', port });
    sock.setTimeout(timeoutMs, () => sock.destroy(new Error(`${word}: no reply within ${timeoutMs} ms`)));
    sock.on('connect', () => sock.end(word));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
