// Real MCP server built on the official TypeScript SDK (@modelcontextprotocol/sdk, pinned in lab/package.json).
// Usage: node ts_server.mjs --transport streamable|legacy-sse|stdio [--port N] [--json] [--event-store] [--agent-tools]
// Loopback only (127.0.0.1). Tools: read_note, delete_file, fail_tool, slow_progress.
// --agent-tools adds the long-session tools: list_notes, search_notes (read-only), write_note (idempotent
// write), sync_notes (non-idempotent write that reports progress), as in py_server.py.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { z } from 'zod';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const flag = (name) => argv.includes(name);
const transportKind = opt('--transport', 'streamable');
const port = Number(opt('--port', '18082'));
const jsonResponse = flag('--json');
const useEventStore = flag('--event-store');
const agentTools = flag('--agent-tools');
const log = (...a) => process.stderr.write(`[ts_server] ${a.join(' ')}\n`);

let deletions = 0;
function buildServer() {
  const server = new McpServer({ name: 'lab-ts-server', version: '1.0.0' });
  server.registerTool('read_note', {
    description: 'Read a note by name (read-only).',
    inputSchema: { name: z.string() },
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
  }, async ({ name }) => ({ content: [{ type: 'text', text: `note ${name}: remember the milk` }] }));
  server.registerTool('delete_file', {
    description: 'Delete a file (destructive, not idempotent). Simulated: nothing is deleted.',
    inputSchema: { path: z.string() },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
  }, async ({ path }) => {
    deletions += 1;
    return { content: [{ type: 'text', text: `deleted ${path} (deletion #${deletions} in this server process)` }] };
  });
  server.registerTool('fail_tool', {
    description: 'Always fails with a tool-level error (isError: true).',
    inputSchema: { reason: z.string().optional() },
    annotations: { readOnlyHint: true },
  }, async ({ reason }) => ({ content: [{ type: 'text', text: `fail_tool failed: ${reason ?? 'no reason'}` }], isError: true }));
  server.registerTool('slow_progress', {
    description: 'Sends notifications/progress (when the caller gave a progressToken) before its result.',
    inputSchema: { steps: z.number().int().min(1).max(10), delay_ms: z.number().int().min(0).max(2000) },
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
  }, async ({ steps, delay_ms }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      await new Promise((r) => setTimeout(r, delay_ms));
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}/${steps}` } });
      }
    }
    return { content: [{ type: 'text', text: `slow_progress done after ${steps} steps` }] };
  });
  if (agentTools) addAgentTools(server);
  return server;
}

const notes = new Map([['groceries', 'remember the milk'], ['todo', 'call the plumber']]);
let syncs = 0;
function addAgentTools(server) {
  const text = (t) => ({ content: [{ type: 'text', text: t }] });
  server.registerTool('list_notes', {
    description: 'List note names (read-only).',
    inputSchema: {},
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
  }, async () => text([...notes.keys()].sort().join(', ')));
  server.registerTool('search_notes', {
    description: 'Names of notes whose text contains the query (read-only).',
    inputSchema: { query: z.string() },
    annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false },
  }, async ({ query }) => text([...notes].filter(([, v]) => v.includes(query)).map(([k]) => k).join(', ') || 'none'));
  server.registerTool('write_note', {
    description: 'Create or replace a note (a write; idempotent: the same arguments leave the same state).',
    inputSchema: { name: z.string(), text: z.string() },
    annotations: { readOnlyHint: false, idempotentHint: true, destructiveHint: false },
  }, async ({ name, text: t }) => { notes.set(name, t); return text(`wrote ${name}`); });
  server.registerTool('sync_notes', {
    description: 'Push all notes to a target (a write, not idempotent: each call makes a new sync). '
      + 'Sends notifications/progress (when the caller gave a progressToken) before its result.',
    inputSchema: { target: z.string() },
    annotations: { readOnlyHint: false, idempotentHint: false, destructiveHint: false },
  }, async ({ target }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: 2 } });
      }
    }
    syncs += 1;
    return text(`synced ${notes.size} notes to ${target} (sync #${syncs})`);
  });
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (!raw) return undefined;
  try { return JSON.parse(raw); } catch { return raw; }
}

function jsonError(res, status, code, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

if (transportKind === 'stdio') {
  const server = buildServer();
  await server.connect(new StdioServerTransport());
  log('stdio ready');
} else if (transportKind === 'streamable') {
  const transports = new Map(); // session id -> transport
  const httpServer = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, `http://${req.headers.host}`);
      if (url.pathname !== '/mcp') { res.writeHead(404).end('not found'); return; }
      const sid = req.headers['mcp-session-id'];
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      if (sid) {
        const t = transports.get(sid);
        // Unknown or expired session: 404 as the spec (and the SDK's own single-session check) says.
        if (!t) { jsonError(res, 404, -32001, 'Session not found'); return; }
        await t.handleRequest(req, res, body);
        return;
      }
      if (req.method === 'POST' && body && !Array.isArray(body) && body.method === 'initialize') {
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: jsonResponse,
          eventStore: useEventStore ? new InMemoryEventStore() : undefined,
          onsessioninitialized: (id) => { transports.set(id, t); log('session', id); },
          onsessionclosed: (id) => { transports.delete(id); log('session closed', id); },
        });
        t.onclose = () => { if (t.sessionId) transports.delete(t.sessionId); };
        await buildServer().connect(t);
        await t.handleRequest(req, res, body);
        return;
      }
      jsonError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    } catch (e) {
      log('error', e?.stack ?? e);
      if (!res.headersSent) jsonError(res, 500, -32603, 'Internal server error');
    }
  });
  httpServer.listen(port, '127.0.0.1', () => log(`streamable http on 127.0.0.1:${port} json=${jsonResponse} eventStore=${useEventStore} agentTools=${agentTools}`));
} else if (transportKind === 'legacy-sse') {
  const transports = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, `http://${req.headers.host}`);
      if (req.method === 'GET' && url.pathname === '/sse') {
        const t = new SSEServerTransport('/messages', res);
        transports.set(t.sessionId, t);
        res.on('close', () => transports.delete(t.sessionId));
        await buildServer().connect(t);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/messages') {
        const t = transports.get(url.searchParams.get('sessionId'));
        if (!t) { res.writeHead(404).end('Session not found'); return; }
        await t.handlePostMessage(req, res);
        return;
      }
      res.writeHead(404).end('not found');
    } catch (e) {
      log('error', e?.stack ?? e);
      if (!res.headersSent) res.writeHead(500).end('error');
    }
  });
  httpServer.listen(port, '127.0.0.1', () => log(`legacy HTTP+SSE on 127.0.0.1:${port}`));
} else {
  log('unknown transport', transportKind);
  process.exit(2);
}
