// A scripted A2A agent on the official JavaScript SDK (@a2a-js/sdk 1.3.0 + express), for Volcanic's
// A2A client tests. Usage: node a2a_js_peer.cjs PORT NODE_MODULES
// The first word of the message's text chooses what the task does:
//   run N ...  works N seconds (WORKING), then completes with the artifact "done: <text>";
//   anything   completes at once with the artifact "answer: <text>".
// Prints "ready" once it listens.
'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');

const port = Number(process.argv[2]);
const need = createRequire(path.join(process.argv[3], 'noop.js'));
const express = need('express');
const sdk = need('@a2a-js/sdk');
const server = need('@a2a-js/sdk/server');
const { jsonRpcHandler, agentCardHandler, UserBuilder } = need('@a2a-js/sdk/server/express');
const { TaskState } = sdk;

const url = `http://127.0.0.1:${port}/`;
const card = {
  name: 'js peer',
  description: 'A scripted agent on @a2a-js/sdk',
  version: '1.0.0',
  supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [] },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'script', name: 'script', description: 'run N, or answer', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
  securitySchemes: {},
  securityRequirements: [],
  signatures: [],
};

const text = (value) => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class Scripted {
  async execute(ctx, bus) {
    const said = (ctx.userMessage.parts || [])
      .map((p) => (p.content && p.content.$case === 'text' ? p.content.value : ''))
      .join(' ');
    const { taskId, contextId } = ctx;
    const status = (state) => ({ state, message: undefined, timestamp: new Date().toISOString() });
    bus.publish(server.AgentEvent.task({
      id: taskId, contextId, status: status(TaskState.TASK_STATE_WORKING), artifacts: [], history: [ctx.userMessage], metadata: undefined,
    }));
    const words = said.trim().split(/\s+/);
    let answer = `answer: ${said}`;
    if (words[0] === 'run') {
      await sleep(1000 * (Number(words[1]) || 1));
      answer = `done: ${said}`;
    }
    bus.publish(server.AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: 'result', name: 'result', description: '', parts: [text(answer)], metadata: undefined, extensions: [] },
    }));
    bus.publish(server.AgentEvent.statusUpdate({ taskId, contextId, status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined }));
    bus.finished();
  }

  async cancelTask() {}
}

const handler = new server.DefaultRequestHandler(card, new server.InMemoryTaskStore(), new Scripted());
const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.listen(port, '127.0.0.1', () => console.log('ready'));
