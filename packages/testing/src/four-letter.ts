import { connect } from 'node:net';
import { type ConnectionOptions as TlsConnectionOptions, connect as tlsConnect } from 'node:tls';

/**
 * Sends a ZooKeeper four-letter-word command (`ruok`, `srvr`, `mntr`...) and
 * returns the reply; over TLS when `tls` is given (a server's secure port).
 */
export function fourLetterWord(
  port: number,
  word: string,
  timeoutMs = 2000,
  tls?: TlsConnectionOptions,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const sock = tls ? tlsConnect({ host: '127.0.0.1', port, ...tls }) : connect({ host: '127.0.0.1', port });
    sock.setTimeout(timeoutMs, () => sock.destroy(new Error(`${word}: no reply within ${timeoutMs} ms`)));
    sock.on(tls ? 'secureConnect' : 'connect', () => sock.end(word));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
