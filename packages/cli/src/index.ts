export { buildParser, main } from './cli.js';
export {
  createZooKeeperDashboard,
  ZooKeeperBullMQAdapter,
  type ZooKeeperDashboard,
  type ZooKeeperDashboardOptions,
  ZooKeeperFacts,
} from './dashboard.js';
export {
  CliError,
  describeError,
  EXIT,
  EXIT_MEANINGS,
  NotSupportedError,
  QueueNotFoundError,
  UsageError,
} from './errors.js';
