/**
 * Server settings for secured test servers: SASL (DIGEST-MD5 users in a JAAS
 * file) with authentication enforced. Everything is made at test time in a
 * temporary directory; nothing secret is kept in the repository.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ZooKeeperServerOptions } from './server.js';

export interface SaslServerOptions {
  /** DIGEST-MD5 users the server accepts, name to password. */
  users: Record<string, string>;
  /** Refuse every request of a connection that has not authenticated with SASL. Default true. */
  enforce?: boolean;
  /** Where the JAAS file goes. Default: a fresh temporary directory. */
  dir?: string;
}

/** zoo.cfg settings and JVM flags of a server taking SASL DIGEST-MD5 logins (ZooKeeper's DigestLoginModule). */
export function saslServerOptions(options: SaslServerOptions): Pick<ZooKeeperServerOptions, 'config' | 'jvmFlags'> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'zkq-sasl-'));
  const users = Object.entries(options.users)
    .map(([name, password]) => `  user_${name}=${JSON.stringify(password)}`)
    .join('\n');
  const jaas = join(dir, 'jaas.conf');
  writeFileSync(jaas, `Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n${users};\n};\n`, {
    mode: 0o600,
  });
  const enforce = options.enforce ?? true;
  return {
    config: {
      'authProvider.sasl': 'org.apache.zookeeper.server.auth.SASLAuthenticationProvider',
      ...(enforce ? { 'enforce.auth.enabled': true, 'enforce.auth.schemes': 'sasl' } : {}),
    },
    jvmFlags: [`-Djava.security.auth.login.config=${jaas}`],
  };
}
