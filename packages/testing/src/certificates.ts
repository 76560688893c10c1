/**
 * Certificates for TLS test servers, made at test time with openssl and
 * keytool (about a second) in a temporary directory: a CA, a server
 * certificate for localhost / 127.0.0.1 in a PKCS12 key store, a trust store
 * holding the CA, client certificates (a valid one, an expired one) and a
 * second CA that signed none of them. The store password is random per set.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A client certificate and its key, PEM files. */
export interface ClientCertificate {
  cert: string;
  key: string;
  /** The subject as ZooKeeper's X509AuthenticationProvider names it (the `x509` ACL id). */
  subject: string;
}

export interface TestCertificates {
  dir: string;
  /** The CA that signed the server's and the clients' certificates (PEM file). */
  ca: string;
  /** A CA that signed nothing here (PEM file): trusting it instead of `ca` fails the handshake. */
  otherCa: string;
  /** The server's key store (PKCS12, its certificate and key) and trust store (PKCS12, `ca`). */
  keyStore: string;
  trustStore: string;
  /** The password of both stores. */
  password: string;
  client: ClientCertificate;
  /** Signed by `ca`, but expired the day before it was made. */
  expiredClient: ClientCertificate;
}

export interface TestCertificateOptions {
  /** Where the files go. Default: a fresh temporary directory. */
  dir?: string;
  /** Subject of the client certificate, e.g. `/O=tenant-a/CN=zkq-client` (the default). */
  clientSubject?: string;
  /** Host names and IP addresses the server certificate names. Default `localhost`, `127.0.0.1`. */
  serverNames?: string[];
  /** How long the certificates are valid, days. Default 7. */
  days?: number;
}

function run(command: string, args: string[], cwd: string): void {
  execFileSync(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** X509AuthenticationProvider's id for an openssl `-subj`: RFC 2253 order, most specific first. */
function rfc2253(subject: string): string {
  return subject.split('/').filter(Boolean).reverse().join(',');
}

/** Makes a fresh set of test certificates (needs `openssl` and `keytool` on the PATH). */
export function makeTestCertificates(options: TestCertificateOptions = {}): TestCertificates {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'zkq-tls-'));
  const password = randomBytes(12).toString('hex');
  const days = String(options.days ?? 7);
  const serverNames = options.serverNames ?? ['localhost', '127.0.0.1'];
  const altNames = serverNames.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  const selfSigned = (name: string, cn: string) =>
    run(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.pem`,
        '-days',
        days,
        '-subj',
        `/CN=${cn}`,
      ],
      dir,
    );
  selfSigned('ca', 'zkq test CA');
  selfSigned('other-ca', 'zkq other CA');
  const signed = (name: string, subject: string, validDays: string, extensions?: string) => {
    run(
      'openssl',
      ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject],
      dir,
    );
    const args = ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'];
    args.push('-out', `${name}.pem`, '-days', validDays);
    if (extensions) {
      writeFileSync(join(dir, `${name}.ext`), `${extensions}\n`);
      args.push('-extfile', `${name}.ext`);
    }
    run('openssl', args, dir);
  };
  signed('server', `/CN=${serverNames[0]}`, days, `subjectAltName=${altNames}`);
  const clientSubject = options.clientSubject ?? '/O=tenant-a/CN=zkq-client';
  signed('client', clientSubject, days);
  signed('expired-client', clientSubject, '-1');
  run(
    'openssl',
    [
      'pkcs12',
      '-export',
      '-in',
      'server.pem',
      '-inkey',
      'server.key',
      '-out',
      'server.p12',
      '-passout',
      `pass:${password}`,
    ],
    dir,
  );
  run(
    'keytool',
    [
      '-importcert',
      '-noprompt',
      '-alias',
      'ca',
      '-file',
      'ca.pem',
      '-storetype',
      'PKCS12',
      '-keystore',
      'trust.p12',
      '-storepass',
      password,
    ],
    dir,
  );
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    otherCa: join(dir, 'other-ca.pem'),
    keyStore: join(dir, 'server.p12'),
    trustStore: join(dir, 'trust.p12'),
    password,
    client: { cert: join(dir, 'client.pem'), key: join(dir, 'client.key'), subject: rfc2253(clientSubject) },
    expiredClient: {
      cert: join(dir, 'expired-client.pem'),
      key: join(dir, 'expired-client.key'),
      subject: rfc2253(clientSubject),
    },
  };
}

/** The PEM text of a file of a set (for options that take contents). */
export function pem(file: string): string {
  return readFileSync(file, 'utf8');
}
