export {
  type ClientCertificate,
  makeTestCertificates,
  pem,
  type TestCertificateOptions,
  type TestCertificates,
} from './certificates.js';
export { ChromiumNotInstalledError, type ChromiumSystem, ensureChromium, findChromium } from './chromium.js';
export { fourLetterWord } from './four-letter.js';
export { ensureZooKeeper, findZooKeeperClasspath, nettyClasspath, ZooKeeperNotInstalledError } from './install.js';
export { freePort, freePorts } from './ports.js';
export { type PacketHook, type ProxiedConnection, TcpProxy, type TcpProxyOptions } from './proxy.js';
export {
  ensureRedis,
  findRedisServer,
  type RedisAppendFsync,
  RedisNotInstalledError,
  RedisOptionError,
  type RedisServer,
  type RedisServerOptions,
  RedisStartError,
  redisCommand,
  redisInfo,
  startRedis,
} from './redis.js';
export { type SaslServerOptions, saslServerOptions } from './security.js';
export {
  type ServerTlsOptions,
  startEnsemble,
  startZooKeeper,
  type ZooKeeperEnsemble,
  ZooKeeperProcess,
  type ZooKeeperServer,
  type ZooKeeperServerOptions,
  ZooKeeperStartError,
} from './server.js';
export { expireSession, type SessionCredentials } from './session-faults.js';
export { SHARED_SERVER_ENV, sharedZooKeeper, uniqueRoot } from './shared-server.js';
