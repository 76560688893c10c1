/**
 * Makes the files of docker-compose.yml's `tls` profile in one folder
 * (default `tls/`, beside docker-compose.yml; git and the image build leave
 * it out):
 *
 *   ca.pem                 the CA that signs the server's and the worker's certificates
 *   server.p12, trust.p12  the server's key store (certificate for zk-tls, localhost,
 *                          127.0.0.1) and trust store (the CA), PKCS12, one random password
 *   client.pem, client.key the worker's certificate (subject O=zkq,CN=zkq-worker, its x509
 *                          identity) and key
 *   zoo.cfg                the TLS-only ZooKeeper's configuration, naming the stores under /tls
 *
 * Run from the repository: `npx tsx scripts/tls-certificates.ts [folder]`. Needs `openssl`
 * and a JDK's `keytool` on the PATH; the certificates come from the test harness's
 * generator (packages/testing/src/certificates.ts) and are valid for a year. The folder
 * holds keys: keep it out of version control and images, and make new ones for real
 * deployments from your own CA.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { makeTestCertificates } from '../packages/testing/src/certificates.js';

/** The TLS service's host name in docker-compose.yml, and the port it serves on. */
export const TLS_HOST = 'zk-tls';
export const TLS_PORT = 2281;
/** Where the folder is mounted in both containers. */
export const MOUNT = '/tls';
export const WORKER_SUBJECT = '/O=zkq/CN=zkq-worker';

const dir = resolve(process.argv[2] ?? 'tls');
mkdirSync(dir, { recursive: true });
const certs = makeTestCertificates({
  dir,
  clientSubject: WORKER_SUBJECT,
  serverNames: [TLS_HOST, 'localhost', '127.0.0.1'],
  days: 365,
});
const zooCfg = [
  'dataDir=/data',
  'dataLogDir=/datalog',
  'tickTime=2000',
  'initLimit=10',
  'syncLimit=5',
  'autopurge.purgeInterval=1',
  'autopurge.snapRetainCount=5',
  'admin.enableServer=false',
  '4lw.commands.whitelist=srvr,ruok,mntr,stat,conf',
  // TLS only: no clientPort
  `secureClientPort=${TLS_PORT}`,
  'serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory',
  `ssl.keyStore.location=${MOUNT}/server.p12`,
  `ssl.keyStore.password=${certs.password}`,
  'ssl.keyStore.type=PKCS12',
  `ssl.trustStore.location=${MOUNT}/trust.p12`,
  `ssl.trustStore.password=${certs.password}`,
  'ssl.trustStore.type=PKCS12',
  'ssl.clientAuth=need',
  'authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider',
];
writeFileSync(`${dir}/zoo.cfg`, `${zooCfg.join('\n')}\n`, { mode: 0o600 });
// the containers' users must read them (the folder is mounted read-only)
for (const file of ['zoo.cfg', 'server.p12', 'trust.p12', 'client.key']) chmodSync(`${dir}/${file}`, 0o644);
process.stdout.write(`certificates for ${TLS_HOST} and the worker (x509 identity ${certs.client.subject}) in ${dir}\n`);
