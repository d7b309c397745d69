// openai-interop.mjs BASE_URL MODEL: drives agentrace's simulated server with the
// official openai SDK (pinned in package.json) and asserts what a client relies
// on. Prints one JSON line of results; exits 1 on the first failed assertion.
// Run by simserver's TestOpenAISDK.
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai-interop.mjs BASE_URL MODEL');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'sim', maxRetries: 0, timeout: 60_000 });
const results = {};

function check(cond, what) {
  if (!cond) {
    console.error('FAIL: ' + what);
    console.log(JSON.stringify(results));
    process.exit(1);
  }
}

const tools = [{
  type: 'function',
  function: {
    name: 'bash',
    description: 'Run a shell command',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
}];

// 1. Streaming with usage.
{
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Describe a cache.' }],
    stream: true,
    stream_options: { include_usage: true },
    max_completion_tokens: 64,
  });
  let content = '', reasoning = '', finish = null, usage = null, chunks = 0, role = null;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      content += c.delta.content ?? '';
      reasoning += c.delta.reasoning_content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  check(role === 'assistant', 'stream: role chunk');
  check(reasoning.length > 0, 'stream: reasoning_content deltas');
  check(finish === 'length' || finish === 'stop', `stream: finish_reason ${finish}`);
  check(usage && usage.prompt_tokens > 0 && usage.completion_tokens > 0 &&
    usage.total_tokens === usage.prompt_tokens + usage.completion_tokens, 'stream: usage chunk ' + JSON.stringify(usage));
  check(usage.prompt_tokens_details && typeof usage.prompt_tokens_details.cached_tokens === 'number', 'stream: cached_tokens');
  check(usage.completion_tokens <= 64, 'stream: max_completion_tokens honoured');
  results.stream = { chunks, finish, usage };
}

// 2. Tool calls, streamed (accumulated by the SDK's own stream helper) and not.
{
  const messages = [{ role: 'system', content: 'You fix bugs.' }, { role: 'user', content: 'List the files.' }];
  const runner = client.chat.completions.stream({ model, messages, tools, max_completion_tokens: 400 });
  const final = await runner.finalChatCompletion();
  const msg = final.choices[0].message;
  check(final.choices[0].finish_reason === 'tool_calls', 'tool stream: finish_reason ' + final.choices[0].finish_reason);
  check(msg.tool_calls?.length === 1 && msg.tool_calls[0].function.name === 'bash', 'tool stream: one bash call');
  check(typeof msg.tool_calls[0].id === 'string' && msg.tool_calls[0].id.length > 0, 'tool stream: call id');
  const args = JSON.parse(msg.tool_calls[0].function.arguments);
  check(typeof args.command === 'string' && args.command.length > 0, 'tool stream: arguments carry a command');
  const plain = await client.chat.completions.create({ model, messages, tools, max_completion_tokens: 400 });
  check(plain.choices[0].message.tool_calls?.[0]?.function?.name === 'bash', 'tool: non-streamed call');
  results.tools = { streamed: msg.tool_calls[0], plain: plain.choices[0].message.tool_calls[0] };
}

// 3. A growing conversation hits the prefix cache, including the generated answer.
{
  const messages = [
    { role: 'system', content: 'You are a careful software engineer working in a repository.' },
    { role: 'user', content: 'The parser test fails. Find out why.' },
  ];
  const turns = [];
  let prevPrompt = 0;
  for (let i = 0; i < 4; i++) {
    const r = await client.chat.completions.create({ model, messages, tools, max_completion_tokens: 400 });
    const m = r.choices[0].message;
    const u = r.usage;
    turns.push({ prompt: u.prompt_tokens, cached: u.prompt_tokens_details.cached_tokens, completion: u.completion_tokens });
    if (i > 0) {
      // Everything up to the previous prompt and its answer is cached, but for
      // the partly filled last blocks (16 tokens each).
      check(u.prompt_tokens_details.cached_tokens >= prevPrompt - 16, `turn ${i}: cached ${u.prompt_tokens_details.cached_tokens} of previous prompt ${prevPrompt}`);
    }
    prevPrompt = u.prompt_tokens;
    const echo = { role: 'assistant', content: m.content ?? null, reasoning_content: m.reasoning_content };
    if (m.tool_calls) echo.tool_calls = m.tool_calls;
    messages.push(echo);
    for (const tc of m.tool_calls ?? []) {
      messages.push({ role: 'tool', tool_call_id: tc.id, content: `output of step ${i}: ok` });
    }
    if (!m.tool_calls) messages.push({ role: 'user', content: 'Go on.' });
  }
  check(turns[3].cached > turns[1].cached, 'conversation: cached tokens grow');
  results.conversation = turns;
}

// 4. Bad input: a clear 4xx that the SDK maps to its error classes.
{
  const cases = [
    { name: 'no messages', body: { model, messages: [] }, status: 400, cls: OpenAI.BadRequestError },
    { name: 'unknown model', body: { model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }, status: 404, cls: OpenAI.NotFoundError },
  ];
  results.errors = [];
  for (const c of cases) {
    let err = null;
    try {
      await client.chat.completions.create(c.body);
    } catch (e) {
      err = e;
    }
    check(err instanceof c.cls && err.status === c.status, `${c.name}: got ${err?.constructor?.name} ${err?.status}`);
    check(typeof err.error?.message === 'string' && err.error.message.length > 0, `${c.name}: error message`);
    results.errors.push({ name: c.name, status: err.status, message: err.error.message });
  }
}

console.log(JSON.stringify(results));
