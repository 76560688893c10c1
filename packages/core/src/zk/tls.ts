/**
 * TLS to ZooKeeper's secure client port (`secureClientPort`, Netty): plain
 * TLS, the ZooKeeper protocol unchanged inside it. The options are checked
 * once at the entry; the wire client's connection is opened with them on
 * every (re)connection, to whichever server of the ensemble it picks.
 */
import { createSecureContext } from 'node:tls';

/** TLS options of a connection; PEM contents (not file names). */
export interface TlsOptions {
  /** CA certificates that sign the servers' certificates. Default: Node's bundled root CAs. */
  ca?: string | Buffer | readonly (string | Buffer)[];
  /**
   * This client's certificate and its key, both or neither: required by a
   * server with `ssl.clientAuth=need`, and the session's `x509` identity
   * (its subject) with ZooKeeper's X509AuthenticationProvider.
   */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** The name the servers' certificates must carry. Default: each server's host from the connection string. */
  servername?: string;
  /** Verify the server's certificate (chain, expiry, name). Default true; false only for tests. */
  rejectUnauthorized?: boolean;
}

const KEYS = new Set(['ca', 'cert', 'key', 'servername', 'rejectUnauthorized']);

const isPem = (v: unknown): v is string | Buffer => (typeof v === 'string' && v.length > 0) || Buffer.isBuffer(v);
/** PEM text holding a block of that kind (TLS ignores text that is not PEM, silently). */
const holds = (v: string | Buffer, kind: RegExp): boolean => kind.test(v.toString());
const CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/**
 * What is wrong with `tls` as TlsOptions, as `[message, option]` (the option
 * named under `name`), or undefined when it can be used. Certificates and
 * the key are parsed, so a file that is not PEM, or a key that does not
 * match its certificate, is refused here rather than at the first connection.
 */
export function tlsOptionsProblem(tls: unknown, name = 'tls'): [message: string, option: string] | undefined {
  if (tls === undefined) return undefined;
  if (!tls || typeof tls !== 'object' || Array.isArray(tls)) {
    return [`${name} must be an object { ca, cert, key, servername, rejectUnauthorized }`, name];
  }
  const t = tls as Record<string, unknown>;
  for (const key of Object.keys(t)) {
    if (!KEYS.has(key))
      return [`${name}.${key} is not a TLS option (ca, cert, key, servername, rejectUnauthorized)`, `${name}.${key}`];
  }
  const cas = t.ca === undefined ? [] : Array.isArray(t.ca) ? t.ca : [t.ca];
  if (t.ca !== undefined && (cas.length === 0 || !cas.every((ca) => isPem(ca) && holds(ca, CERTIFICATE)))) {
    return [`${name}.ca must be PEM certificates (text or a Buffer, or a non-empty array of them)`, `${name}.ca`];
  }
  for (const [key, kind] of [
    ['cert', CERTIFICATE],
    ['key', PRIVATE_KEY],
  ] as const) {
    const v = t[key];
    if (v !== undefined && !(isPem(v) && holds(v, kind))) {
      return [`${name}.${key} must be a PEM ${key === 'cert' ? 'certificate' : 'private key'}`, `${name}.${key}`];
    }
  }
  if ((t.cert === undefined) !== (t.key === undefined)) {
    return [
      `${name}.cert and ${name}.key go together: give both or neither`,
      `${name}.${t.cert === undefined ? 'cert' : 'key'}`,
    ];
  }
  if (t.servername !== undefined && (typeof t.servername !== 'string' || !t.servername)) {
    return [`${name}.servername must be a non-empty string`, `${name}.servername`];
  }
  if (t.rejectUnauthorized !== undefined && typeof t.rejectUnauthorized !== 'boolean') {
    return [`${name}.rejectUnauthorized must be a boolean`, `${name}.rejectUnauthorized`];
  }
  try {
    createSecureContext({
      ...(t.ca !== undefined ? { ca: cas as (string | Buffer)[] } : {}),
      ...(t.cert !== undefined ? { cert: t.cert as string | Buffer, key: t.key as string | Buffer } : {}),
    });
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return [`${name} holds a certificate or key that cannot be used: ${detail}`, name];
  }
  return undefined;
}
