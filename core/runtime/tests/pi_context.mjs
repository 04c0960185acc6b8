// Reads a session file with pi's own SessionManager and prints the context pi builds, as JSON.
// Usage: PI_DEPS=<dir with node_modules> node pi_context.mjs FILE
const deps = process.env.PI_DEPS;
const pi = await import(deps + '/node_modules/@mariozechner/pi-coding-agent/dist/index.js');
const sm = pi.SessionManager.open(process.argv[2]);
const ctx = sm.buildSessionContext();
process.stdout.write(JSON.stringify({ messages: ctx.messages, thinkingLevel: ctx.thinkingLevel, model: ctx.model }));
