/**
 * The client side of SASL DIGEST-MD5 (RFC 2831), as ZooKeeper's server
 * speaks it with its DigestLoginModule: the server's challenge is answered
 * with a digest of the password (never the password itself), and the
 * server's `rspauth` is checked, so a server that does not know the password
 * is not taken for the real one. Only `qop=auth` (authentication, no
 * integrity or privacy layer), as ZooKeeper uses it.
 *
 * GSSAPI (Kerberos) is not implemented: it needs a Kerberos library (tickets
 * from a KDC, a keytab or a credential cache) that Node does not ship.
 */
import { createHash, randomBytes } from 'node:crypto';

/** SASL credentials of a connection. */
export interface SaslOptions {
  /** The mechanism; DIGEST-MD5 is the one supported. */
  mechanism?: 'DIGEST-MD5';
  username: string;
  password: string;
}

/** ZooKeeper's fixed service and host for DIGEST-MD5: the digest-uri is `zookeeper/zk-sasl-md5`. */
const PROTOCOL = 'zookeeper';
const DEFAULT_HOST = 'zk-sasl-md5';

/** A challenge's or response's `key=value` list (values quoted or not, commas inside quotes kept). */
export function parseDirectives(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /\s*([A-Za-z0-9-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,]*))\s*(?:,|$)/gy;
  for (let m = re.exec(text); m !== null && m[0] !== ''; m = re.exec(text)) {
    const key = (m[1] as string).toLowerCase();
    const value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '').trim();
    if (!out.has(key)) out.set(key, value);
  }
  return out;
}

/** RFC 2831: with charset=utf-8, text all in ISO 8859-1 is hashed as 8859-1, anything else as UTF-8. */
function bytes(text: string, utf8: boolean): Buffer {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the whole Latin-1 range is what is tested
  return utf8 && !/^[\u0000-\u00ff]*$/.test(text) ? Buffer.from(text, 'utf8') : Buffer.from(text, 'latin1');
}

const md5 = (...parts: (string | Buffer)[]): Buffer => {
  const h = createHash('md5');
  for (const p of parts) h.update(p);
  return h.digest();
};
const hex = (b: Buffer) => b.toString('hex');
const quote = (s: string) => `"${s.replace(/(["\\])/g, '\\$1')}"`;

export interface DigestParameters {
  username: string;
  password: string;
  realm: string;
  nonce: string;
  cnonce: string;
  nc: string;
  digestUri: string;
  utf8: boolean;
}

/** The `response` value (a2Prefix `AUTHENTICATE`) or the expected `rspauth` (a2Prefix empty), RFC 2831 2.1.2.1. */
export function digestResponse(p: DigestParameters, a2Prefix: 'AUTHENTICATE' | ''): string {
  const secret = md5(bytes(`${p.username}:${p.realm}:`, p.utf8), bytes(p.password, p.utf8));
  const a1 = Buffer.concat([secret, Buffer.from(`:${p.nonce}:${p.cnonce}`)]);
  const a2 = `${a2Prefix}:${p.digestUri}`;
  return hex(md5(`${hex(md5(a1))}:${p.nonce}:${p.nc}:${p.cnonce}:auth:${hex(md5(a2))}`));
}

/** Thrown when the server's challenge or its proof cannot be accepted. */
export class SaslProtocolError extends Error {}

/**
 * One DIGEST-MD5 exchange: `next(challenge)` gives each token to send (the
 * first, for an empty challenge, is empty: DIGEST-MD5 has no initial
 * response), and `done` is true once the server proved it knows the password.
 */
export class DigestMd5Client {
  private step = 0;
  private expected = '';
  done = false;

  constructor(
    private readonly options: SaslOptions,
    private readonly cnonce = randomBytes(16).toString('base64'),
  ) {}

  next(challenge: Buffer): Buffer {
    this.step++;
    if (this.step === 1) return Buffer.alloc(0);
    if (this.step === 2) return this.respond(challenge);
    if (this.step === 3) {
      const rspauth = parseDirectives(challenge.toString('utf8')).get('rspauth');
      if (rspauth !== this.expected) throw new SaslProtocolError('the server did not prove it knows the password');
      this.done = true;
      return Buffer.alloc(0);
    }
    throw new SaslProtocolError('unexpected SASL challenge after the exchange completed');
  }

  private respond(challenge: Buffer): Buffer {
    const d = parseDirectives(challenge.toString('utf8'));
    const nonce = d.get('nonce');
    if (!nonce) throw new SaslProtocolError('DIGEST-MD5 challenge without a nonce');
    const qops = (d.get('qop') ?? 'auth').split(',').map((q) => q.trim());
    if (!qops.includes('auth')) throw new SaslProtocolError(`the server offers no qop=auth (${qops.join(',')})`);
    const realm = d.get('realm') ?? DEFAULT_HOST;
    const utf8 = d.get('charset')?.toLowerCase() === 'utf-8';
    const p: DigestParameters = {
      username: this.options.username,
      password: this.options.password,
      realm,
      nonce,
      cnonce: this.cnonce,
      nc: '00000001',
      digestUri: `${PROTOCOL}/${DEFAULT_HOST}`,
      utf8,
    };
    this.expected = digestResponse(p, '');
    const fields = [
      ...(utf8 ? ['charset=utf-8'] : []),
      `username=${quote(p.username)}`,
      `realm=${quote(realm)}`,
      `nonce=${quote(nonce)}`,
      `nc=${p.nc}`,
      `cnonce=${quote(p.cnonce)}`,
      `digest-uri=${quote(p.digestUri)}`,
      'maxbuf=65536',
      `response=${digestResponse(p, 'AUTHENTICATE')}`,
      'qop=auth',
    ];
    return Buffer.from(fields.join(','), utf8 ? 'utf8' : 'latin1');
  }
}

/** What is wrong with `sasl` as SaslOptions, as `[message, option]`, or undefined when it can be used. */
export function saslOptionsProblem(sasl: unknown, name = 'sasl'): [message: string, option: string] | undefined {
  if (sasl === undefined) return undefined;
  if (!sasl || typeof sasl !== 'object' || Array.isArray(sasl)) {
    return [`${name} must be an object { username, password }`, name];
  }
  const s = sasl as Record<string, unknown>;
  for (const key of Object.keys(s)) {
    if (key !== 'mechanism' && key !== 'username' && key !== 'password') {
      return [`${name}.${key} is not a SASL option (mechanism, username, password)`, `${name}.${key}`];
    }
  }
  if (s.mechanism !== undefined && s.mechanism !== 'DIGEST-MD5') {
    return [`${name}.mechanism must be 'DIGEST-MD5' (the one supported; GSSAPI is not)`, `${name}.mechanism`];
  }
  if (typeof s.username !== 'string' || !s.username)
    return [`${name}.username must be a non-empty string`, `${name}.username`];
  if (typeof s.password !== 'string') return [`${name}.password must be a string`, `${name}.password`];
  return undefined;
}
