/**
 * A problem the user must fix before a command can start (configuration missing or
 * invalid, a directory flag that names nothing): the bin prints its message, with no
 * stack trace, and exits 2. Its own module, so the bin recognises it without loading
 * the commands that throw it.
 */
export class StartupError extends Error {}
