// Drives a real kenning-encounter server with the official TypeScript MCP client.
//
//   node drive.mjs '<config JSON>'      (tests/e2e/test_ts_client.py runs it)
//
// config: {"transport": "stdio", "command": ..., "args": [...], "env": {...}, "session": ...}
//      or {"transport": "http", "url": ..., "session": ...}
//      "only": "listings" stops after the handshake, the listings and one search.
//      "version": the protocol version the client proposes in initialize instead of its
//      latest (the SDK takes any version it knows back; a host pinned to an older one).
//
// What it does, as a host built on the SDK would: initialize; list tools, resources and
// prompts (listTools compiles every outputSchema with the SDK's Ajv); call every tool on a
// small memory (the Client validates each structuredContent); call tools with bad
// arguments; try every bound the read tools' schemas state; cancel slow calls (timeout
// and abort); ping; over HTTP hold, resume and end sessions; close.
//
// Every outcome is one JSON line on stdout ({"event": ...}); pytest asserts on them. A
// step that throws is reported as a line, never left to stop the run, so one failure
// does not hide the next. Nothing but those lines goes to stdout.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const config = JSON.parse(process.argv[2]);
const started = Date.now();
const emit = (record) =>
  process.stdout.write(JSON.stringify({ ...record, ms: Date.now() - started }) + '\n');
const describe = (error) => ({
  name: error?.constructor?.name ?? typeof error,
  code: error?.code,
  message: String(error?.message ?? error),
});
const textOf = (result) =>
  (result?.content ?? []).map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ');

// Every message the client receives, as the SDK's transport hands it on: the tap sits on
// the transport's onmessage, so the Client and the transport themselves are the SDK's own.
function tap(transport) {
  const seen = [];
  const errors = [];
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler && ((message, extra) => (seen.push(message), handler(message, extra))),
    set: (h) => (handler = h),
  });
  return { seen, errors };
}

// Every HTTP exchange the streamable HTTP transport makes (method, status, headers).
const exchanges = [];
async function loggingFetch(url, init) {
  const method = init?.method ?? 'GET';
  const headers = new Headers(init?.headers);
  const response = await fetch(url, init);
  exchanges.push({
    method,
    status: response.status,
    sent_session: headers.get('mcp-session-id'),
    sent_version: headers.get('mcp-protocol-version'),
    last_event_id: headers.get('last-event-id'),
    got_session: response.headers.get('mcp-session-id'),
    content_type: response.headers.get('content-type'),
  });
  return response;
}

function makeTransport(options = {}) {
  if (config.transport === 'stdio') {
    return new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      stderr: 'inherit',
    });
  }
  return new StreamableHTTPClientTransport(new URL(config.url), {
    fetch: loggingFetch,
    ...options,
  });
}

// The version the client proposes, when config.version names one: the Client sends its
// latest, and accepts any it knows that the server answers with.
function propose(transport) {
  if (!config.version) return;
  const send = transport.send.bind(transport);
  transport.send = (message, options) =>
    send(
      message.method === 'initialize'
        ? { ...message, params: { ...message.params, protocolVersion: config.version } }
        : message,
      options,
    );
}

async function open(name, options) {
  const transport = makeTransport(options);
  propose(transport);
  const wire = tap(transport);
  const client = new Client({ name, version: '1.0.0' });
  client.onerror = (error) => wire.errors.push(describe(error));
  await client.connect(transport);
  return { client, transport, wire };
}

// --- the session ------------------------------------------------------------------------
const { client, transport, wire } = await open('kenning-ts-client-test');
const init = wire.seen.find((m) => m.result?.protocolVersion);
emit({
  event: 'connected',
  transport: config.transport,
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  protocol: init?.result?.protocolVersion ?? null,
  instructions: (client.getInstructions() ?? '').length,
  session_id: transport.sessionId ?? null,
});

// --- listings ---------------------------------------------------------------------------
let tools = [];
try {
  tools = (await client.listTools()).tools; // compiles every outputSchema with the SDK's Ajv
  emit({ event: 'listed', kind: 'tools', ok: true, names: tools.map((t) => t.name) });
} catch (error) {
  emit({ event: 'listed', kind: 'tools', ok: false, error: describe(error) });
}
const capabilities = client.getServerCapabilities() ?? {};
if (capabilities.resources) {
  try {
    const { resources } = await client.listResources();
    const { resourceTemplates } = await client.listResourceTemplates();
    const read = [];
    for (const resource of resources) {
      const { contents } = await client.readResource({ uri: resource.uri });
      read.push({ uri: resource.uri, chars: contents.reduce((n, c) => n + (c.text ?? '').length, 0) });
    }
    emit({ event: 'listed', kind: 'resources', ok: true, read, templates: resourceTemplates.length });
  } catch (error) {
    emit({ event: 'listed', kind: 'resources', ok: false, error: describe(error) });
  }
}
if (capabilities.prompts) {
  try {
    const { prompts } = await client.listPrompts();
    emit({ event: 'listed', kind: 'prompts', ok: true, names: prompts.map((p) => p.name) });
  } catch (error) {
    emit({ event: 'listed', kind: 'prompts', ok: false, error: describe(error) });
  }
}

// Each schema on its own, with the validator the Client uses, so a schema Ajv cannot
// compile is named (listTools fails whole on the first one).
const ajv = new AjvJsonSchemaValidator();
const validators = new Map();
for (const tool of tools) {
  for (const [which, schema] of [['input', tool.inputSchema], ['output', tool.outputSchema]]) {
    if (!schema) continue;
    try {
      const validator = ajv.getValidator(schema);
      if (which === 'output') validators.set(tool.name, validator);
      emit({ event: 'schema', tool: tool.name, which, ok: true });
    } catch (error) {
      emit({ event: 'schema', tool: tool.name, which, ok: false, error: describe(error) });
    }
  }
}

// --- calls ------------------------------------------------------------------------------
// only: "listings" stops here (a launch that only lists, as a host does at start).
const listingsOnly = config.only === 'listings';

async function call(name, args, label = name, options = undefined) {
  const record = { event: 'call', tool: name, label };
  try {
    const result = await client.callTool({ name, arguments: args }, undefined, options);
    const structured = result.structuredContent;
    const validator = validators.get(name);
    const check = structured && validator ? validator(structured) : null;
    Object.assign(record, {
      ok: !result.isError,
      is_error: Boolean(result.isError),
      // The Client validated it already (it throws on a mismatch); checked again here so a
      // test can tell "validated and passed" from "nothing to validate".
      validated: Boolean(check?.valid),
      schema_error: check && !check.valid ? check.errorMessage : null,
      structured: structured ?? null,
      text: textOf(result).slice(0, 2000),
    });
    return { result, structured: structured ?? {} };
  } catch (error) {
    Object.assign(record, { ok: false, threw: describe(error) });
    return { result: null, structured: {} };
  } finally {
    if (record.structured && JSON.stringify(record.structured).length > 4000) {
      record.structured = { keys: Object.keys(record.structured) };
    }
    emit(record);
  }
}

// Calls read_cypher with a slow query, cancels it, then checks the session still answers.
async function cancelled(how, query) {
  const record = { event: 'cancel', how };
  const controller = new AbortController();
  const started = Date.now();
  const options = how === 'abort' ? { signal: controller.signal } : { timeout: 300 };
  const pending = client.callTool({ name: 'read_cypher', arguments: { query } }, undefined, options);
  if (how === 'abort') setTimeout(() => controller.abort('the user pressed stop'), 300);
  try {
    const result = await pending;
    Object.assign(record, { settled: 'answered', is_error: Boolean(result.isError), text: textOf(result).slice(0, 300) });
  } catch (error) {
    Object.assign(record, { settled: 'rejected', error: describe(error) });
  }
  record.settled_ms = Date.now() - started;
  const t0 = Date.now();
  try {
    await client.ping();
    record.ping_ms = Date.now() - t0;
  } catch (error) {
    record.ping_error = describe(error);
  }
  const after = await call('search', { query: 'retry storm' }, `search (after the ${how})`);
  record.next_call_ok = Boolean(after.result && !after.result.isError);
  emit(record);
}

const session = config.session;
// The scenario: a small memory built and read with every tool, bad arguments, cancellation.
async function scenario() {
  const advanced = await call('advance_encounter', {
    session_id: session,
    purpose: 'Find out why deploys at 09:00 trigger a retry storm',
  });
  const me = advanced.structured.handle ?? session;

  const OBS = 'retry storm on deploy';
  const OBS2 = 'auth latency flat at 09:00';
  const HYP = 'cron overlaps deploy';
  const QUESTION = 'why does the storm start at 09:00';
  const CONCEPT = 'deploy-time load';
  const NOTE = 'check backoff jitter';
  const SCRATCH = 'scratch note to undo';
  const FILE = 'retry.py';
  const FILE2 = 'retry module';
  const CITATION = 'incident report 42';

  const created = await call('create_entities', {
    session_id: me,
    entities: [
      { type: 'Observation', name: OBS, description: 'Deploys at 09:00 set off a retry storm against auth.', t_observed: '2026-03-02T09:00:00Z' },
      { type: 'Observation', name: OBS2, description: 'Auth latency stayed flat during the 09:00 deploy.' },
      { type: 'Hypothesis', name: HYP, description: 'The nightly cron and the deploy overlap at 09:00.' },
      { type: 'Question', name: QUESTION, description: 'What starts the storm at exactly 09:00?' },
      { type: 'Concept', name: CONCEPT, description: 'Load that comes with each deploy: restarts, cold caches.' },
      { type: 'Note', name: NOTE, description: 'Check whether the retry backoff has jitter.' },
      { type: 'Note', name: SCRATCH, description: 'Recorded by mistake, deleted again.' },
      { type: 'Component', name: FILE, description: 'The auth client retry loop.', source_kind: 'file', source_label: 'auth-client', source_key: 'src/retry.py' },
      { type: 'Component', name: FILE2, description: 'The retry module of the auth client.', source_kind: 'file', source_label: 'auth-client', source_key: 'lib/retry.py' },
      { type: 'Citation', name: CITATION, description: 'The postmortem of the 09:00 storm.', kind: 'web', uri: 'https://example.org/incidents/42' },
    ],
  });
  const tick = created.structured.tick;

  await call('create_relations', {
    session_id: me,
    relations: [
      { source: OBS, type: 'SUPPORTS', target: HYP },
      { source: OBS2, type: 'CHALLENGES', target: HYP },
      { source: OBS, type: 'RAISES', target: QUESTION },
      { source: OBS, type: 'GROUNDS', target: CONCEPT },
      { source: OBS, type: 'OBSERVED_AT', target: FILE },
      { source: CITATION, type: 'SUPPORTS', target: CONCEPT },
      { source: NOTE, type: 'ABOUT', target: CONCEPT },
      { source: HYP, type: 'RESOLVES', target: QUESTION },
    ],
  });
  await call('create_entities', {
    session_id: me,
    entities: [
      { type: 'Hypothesis', name: `${HYP} (revised)`, description: 'The cron starts at 08:59 and the deploy at 09:00.', supersedes: HYP, revision_why: 'the cron log shows 08:59' },
    ],
  }, 'create_entities (a revision)');

  await call('search', { query: 'retry storm' });
  await call('search', { query: 'deploy', types: ['Observation', 'Hypothesis'], limit: 5, when: '2026-03-01..' }, 'search (types, when)');
  await call('find_by_name', { name: OBS, session_id: me });
  await call('find_by_name', { name: HYP, as_of: tick }, 'find_by_name (as_of)');
  await call('trace_provenance', { ref: CONCEPT, depth: 3 });
  await call('chain_history', { node: HYP });
  await call('conflicts', {});
  await call('read_cypher', { query: 'MATCH (o:Observation) WHERE o.name = $n RETURN o.name AS name', params: { n: OBS } });
  await call('get_schema', {});
  await call('list_node_types', {});
  await call('list_relation_types', {});
  await call('list_vocabulary', undefined, 'list_vocabulary (no arguments at all)');
  await call('orient', { session_id: me, top_k: 5 });
  await call('gds_create_projection', { name: 'ts-work' });
  for (const algorithm of ['gds_pagerank', 'gds_articlerank', 'gds_betweenness', 'gds_leiden', 'gds_wcc']) {
    await call(algorithm, { name: 'ts-work', top_k: 5 });
  }
  await call('gds_drop_projection', { name: 'ts-work' });
  await call('infuse', { session_id: me, prompt: 'why does the deploy set off a retry storm?' });
  await call('infuse_meaning', { prompt: 'why does the deploy set off a retry storm?' });
  await call('confirm_entities', { session_id: me, refs: [OBS], why: 're-read the deploy log' });
  await call('claim_referents', {
    session_id: me,
    claims: [{ source: FILE, target: FILE2, resolution: 'proposed', why: 'both hold the retry loop' }],
  });
  await call('pin_entities', { session_id: me, refs: [NOTE], why: 'the on-call checklist' });
  await call('delete_relations', { session_id: me, relations: [{ source: NOTE, type: 'ABOUT', target: CONCEPT }] });
  await call('delete_entities', { session_id: me, refs: [SCRATCH] });

  // --- refusals: each must come back as a tool error naming what is wrong -------------------
  async function refusal(name, args, names, label) {
    const record = { event: 'refusal', tool: name, label, names };
    try {
      const result = await client.callTool({ name, arguments: args });
      Object.assign(record, { is_error: Boolean(result.isError), text: textOf(result).slice(0, 1000) });
    } catch (error) {
      Object.assign(record, { is_error: false, threw: describe(error) });
    }
    emit(record);
  }

  await refusal('advance_encounter', {}, ['session_id', 'purpose'], 'required arguments missing');
  await refusal('search', { query: 5 }, ['query'], 'a number for a string');
  await refusal('search', { query: 'x', limit: 0 }, ['limit'], 'below the minimum');
  await refusal('search', { query: 'x', limt: 3 }, ['limt'], 'an unknown argument');
  await refusal('search', { query: 'x', types: ['Gadget'] }, ['Gadget'], 'an unknown node type');
  await refusal('find_by_name', { name: '' }, ['name'], 'an empty name');
  await refusal('trace_provenance', { ref: OBS, depth: 99 }, ['depth'], 'above the maximum');
  await refusal('orient', { budget_chars: 'lots' }, ['budget_chars'], 'a string for a number');
  await refusal('create_entities', { session_id: me, entities: 'a list' }, ['entities'], 'a string for a list');
  await refusal(
    'create_entities',
    { session_id: me, entities: [{ type: 'Observation', name: 'x', description: 'y', colour: 'red' }] },
    ['colour'],
    'an unknown property',
  );
  await refusal(
    'create_entities',
    { session_id: me, entities: [{ type: 'Gadget', name: 'x', description: 'y' }] },
    ['Gadget'],
    'an unknown node type',
  );
  await refusal(
    'create_relations',
    { session_id: me, relations: [{ source: OBS, type: 'LIKES', target: HYP }] },
    ['LIKES'],
    'an unknown relation type',
  );
  await refusal(
    'create_relations',
    { session_id: me, relations: [{ source: OBS, type: 'SUPPORTS', target: FILE }] },
    ['SUPPORTS', 'Component'],
    'a wrong endpoint type',
  );
  await refusal('close_encounter', { session_id: me }, ['summary'], 'a required argument missing');
  await refusal('read_cypher', { query: 'CREATE (n:Note {name: "x"}) RETURN n' }, ['read'], 'a write');
  await refusal('gds_pagerank', { name: 'no-such-projection' }, ['no-such-projection'], 'no such projection');
  await refusal('create_entities', { session_id: session + '-not-mine', entities: [{ type: 'Note', name: 'n', description: 'd' }] }, ['advance_encounter'], 'no open encounter');
  await refusal('no_such_tool', {}, ['no_such_tool'], 'an unknown tool');

  // --- what the schema allows is accepted ---------------------------------------------------
  // A host shows, checks or fills in arguments from each tool's inputSchema: every bound it
  // states (minimum, maximum, minLength, maxLength of a top-level argument of a read tool)
  // must be one the server holds too. Each bound is tried on valid arguments.
  await call('gds_create_projection', { name: 'bounds' }, 'gds_create_projection (for the bounds)');
  const base = {
    search: { query: 'retry storm' },
    find_by_name: { name: OBS },
    trace_provenance: { ref: CONCEPT },
    chain_history: { node: HYP },
    conflicts: {},
    read_cypher: { query: 'RETURN 1 AS one' },
    orient: {},
    gds_create_projection: { name: 'bounds-around', around: OBS },
    gds_pagerank: { name: 'bounds' },
    gds_articlerank: { name: 'bounds' },
    gds_betweenness: { name: 'bounds' },
    gds_leiden: { name: 'bounds' },
    gds_wcc: { name: 'bounds' },
    gds_drop_projection: { name: 'bounds-around' },
    infuse: { session_id: me, prompt: 'retry storm' },
    infuse_meaning: { prompt: 'retry storm' },
  };
  for (const tool of tools) {
    if (!tool.annotations?.readOnlyHint || !(tool.name in base)) continue;
    for (const [field, declared] of Object.entries(tool.inputSchema.properties ?? {})) {
      const schema = (declared.anyOf ?? [declared]).find((s) => s.type && s.type !== 'null') ?? declared;
      const tries = [];
      if (schema.type === 'integer' || schema.type === 'number') {
        if (schema.minimum !== undefined) tries.push(['minimum', schema.minimum]);
        if (schema.maximum !== undefined) tries.push(['maximum', schema.maximum]);
      } else if (schema.type === 'string' && field !== 'session_id') {
        // Letters a name of any kind may hold; a node of that name need not exist.
        if (schema.minLength !== undefined) tries.push(['minLength', 'q'.repeat(Math.max(1, schema.minLength))]);
        if (schema.maxLength !== undefined) tries.push(['maxLength', 'q'.repeat(schema.maxLength)]);
      }
      for (const [bound, value] of tries) {
        const args = { ...base[tool.name], [field]: value };
        if (tool.name === 'gds_create_projection' && field !== 'name') args.name = `b-${field}-${bound}`;
        const record = { event: 'bound', tool: tool.name, field, bound, value: typeof value === 'string' ? `${value.length} chars` : value };
        try {
          const result = await client.callTool({ name: tool.name, arguments: args });
          const text = textOf(result);
          // Refused for this field's size or range, though the schema allows it.
          const sizeWords = /\b(at most|at least|between|too (long|short|many|few|large|small)|longer than|shorter than|exceeds?|maximum|minimum)\b/i;
          record.refused_for_bound = Boolean(result.isError && text.includes(field) && sizeWords.test(text));
          record.text = result.isError ? text.slice(0, 300) : null;
        } catch (error) {
          record.threw = describe(error);
        }
        emit(record);
      }
    }
  }

  // --- cancellation and ping --------------------------------------------------------------
  // The client cancels with notifications/cancelled: on a timeout (a host's request timeout,
  // here 300 ms) and on an abort (the user pressed stop). The read is still running when
  // it is cancelled: every way to pick 8 of the memory's 13 nodes, counted (13^8 rows,
  // several seconds; the store stops what still runs when it closes).
  const SLOW = 'MATCH (a), (b), (c), (d), (e), (f), (g), (h) RETURN count(*) AS n';
  // The last write first, then a read: read_cypher reads a snapshot taken after the last
  // write, so the slow reads start at once.
  await call('close_encounter', { session_id: me, summary: 'Traced the storm to the cron overlap.' });
  await call('read_cypher', { query: 'MATCH (n) RETURN count(*) AS nodes' }, 'read_cypher (a count)');
  await cancelled('timeout', SLOW);
  try {
    const t0 = Date.now();
    await client.ping();
    emit({ event: 'ping', ok: true, ms: Date.now() - t0 });
  } catch (error) {
    emit({ event: 'ping', ok: false, error: describe(error) });
  }
  // Last, the user stops a long read and quits: the read still runs in the server when the
  // client closes (below).
  await cancelled('abort', SLOW);
}

if (listingsOnly) await call('search', { query: 'retry' }, 'listings search');
else await scenario();

// --- HTTP: sessions as StreamableHTTPClientTransport holds them -----------------------------
async function httpSessions() {
  const first = transport.sessionId;
  // A second client is a second session.
  const other = await open('kenning-ts-client-second');
  const second = other.transport.sessionId;
  const otherSearch = await other.client.callTool({ name: 'search', arguments: { query: 'retry' } });
  emit({ event: 'http_second_session', first, second, ok: !otherSearch.isError });

  // A host that restarts keeps the session id and hands it to a new transport: the
  // Client then skips initialize and carries on in the same session.
  const resumed = await open('kenning-ts-client-resumed', { sessionId: first });
  let resumedOk = false;
  let resumedError = null;
  try {
    const r = await resumed.client.callTool({ name: 'search', arguments: { query: 'retry' } });
    resumedOk = !r.isError;
  } catch (error) {
    resumedError = describe(error);
  }
  emit({ event: 'http_resumed', session_id: resumed.transport.sessionId, ok: resumedOk, error: resumedError });
  await resumed.transport.close(); // the transport only: the session stays

  // The server streams no event ids (it keeps no event store), so the client never asks to
  // resume a stream with Last-Event-ID; say what the exchanges were.
  emit({
    event: 'http_exchanges',
    methods: [...new Set(exchanges.map((e) => `${e.method} ${e.status}`))],
    last_event_ids: exchanges.filter((e) => e.last_event_id).length,
    versions_sent: [...new Set(exchanges.map((e) => e.sent_version).filter(Boolean))],
  });

  // Ending: terminateSession sends DELETE with the session id; the id is then gone.
  let terminated = null;
  try {
    await other.transport.terminateSession();
    terminated = { ok: true, session_id_after: other.transport.sessionId ?? null };
  } catch (error) {
    terminated = { ok: false, error: describe(error) };
  }
  const deletes = exchanges.filter((e) => e.method === 'DELETE').map((e) => e.status);
  await other.client.close();
  const stale = await (async () => {
    const again = makeTransport({ sessionId: second });
    const c = new Client({ name: 'kenning-ts-client-stale', version: '1.0.0' });
    try {
      await c.connect(again);
      await c.callTool({ name: 'search', arguments: { query: 'retry' } });
      return { refused: false };
    } catch (error) {
      return { refused: true, error: describe(error) };
    } finally {
      await again.close();
    }
  })();
  emit({ event: 'http_terminated', ...terminated, deletes, stale });
}

if (config.transport === 'http' && !listingsOnly) {
  await httpSessions().catch((error) => emit({ event: 'http_failed', error: describe(error) }));
}

// --- closing ----------------------------------------------------------------------------
// Over stdio, close() ends stdin and gives the server 2 s to exit, then SIGTERM, 2 s more,
// then SIGKILL (the spec's shutdown). A read cancelled above may still be running on the
// server's side; the server must leave without it.
const child = transport._process; // the spawned server, to read how it ended
const ended = child
  ? new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  : Promise.resolve(null);
const closing = Date.now();
await client.close();
const closeMs = Date.now() - closing;
const waited = new Promise((resolve) => setTimeout(() => resolve('still running'), 5000).unref());
const exit = child ? await Promise.race([ended, waited]) : null;
// errors: what the client reported on the way, such as an answer to a request it cancelled
// (the spec: the receiver SHOULD NOT answer one; the SDK reports such an answer as an error).
emit({ event: 'done', closed: true, close_ms: closeMs, exit, errors: wire.errors });
