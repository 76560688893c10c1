export { buildParser, main } from './cli.js';
export {
  createZooKeeperDashboard,
  ZooKeeperBullMQAdapter,
  type ZooKeeperDashboard,
  type ZooKeeperDashboardOptions,
  ZooKeeperFacts,
} from './dashboard.js';
export {
  checkRequest,
  type DashboardAuth,
  type DashboardGuardOptions,
  dashboardGuard,
  hostName,
  LOOPBACK_HOSTS,
  parseDashboardAuth,
} from './dashboard-guard.js';
export {
  CliError,
  describeError,
  EXIT,
  EXIT_MEANINGS,
  NotSupportedError,
  QueueNotFoundError,
  UsageError,
} from './errors.js';
