// The stock `openai` npm client against tessera's LLM server: the client's own request
// shapes (chat with content parts, n, stop, logprobs, seed, streaming with usage,
// completions with a list of prompts, a refused field) must get answers the client parses
// and that are right. Usage: node check.mjs BASE_URL OPENAI_PACKAGE_DIR
// Prints one line per check and a JSON summary; exits 1 when a check fails.
import { createRequire } from "node:module";
import assert from "node:assert/strict";

const [baseURL, packageDir] = process.argv.slice(2);
const require = createRequire(packageDir + "/");
const OpenAI = require(packageDir);
const version = require(packageDir + "/package.json").version;
const client = new OpenAI({ baseURL: baseURL + "/v1", apiKey: "unused", maxRetries: 0 });

const results = [];
async function check(name, fn) {
  try {
    const detail = await fn();
    results.push({ name, ok: true, detail });
    console.log(`ok   ${name}${detail ? ": " + detail : ""}`);
  } catch (e) {
    results.push({ name, ok: false, detail: String(e && e.message ? e.message : e) });
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

const models = await client.models.list();
const model = models.data[0].id;

await check("models.list", async () => {
  assert.equal(models.data.length, 1);
  return model;
});

await check("chat: content parts, n, stop, logprobs, seed", async () => {
  const req = {
    model,
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: [{ type: "text", text: "Say hello" }] },
    ],
    n: 2,
    stop: ["\n", "e"],
    logprobs: true,
    top_logprobs: 2,
    max_tokens: 12,
    temperature: 0.8,
    seed: 11,
  };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.equal(a.object, "chat.completion");
  assert.equal(a.choices.length, 2);
  let tokens = 0;
  for (const [i, c] of a.choices.entries()) {
    assert.equal(c.index, i);
    assert.equal(c.message.role, "assistant");
    assert.ok(!c.message.content.includes("\n") && !c.message.content.includes("e"),
              "a stop string in the text: " + JSON.stringify(c.message.content));
    assert.ok(["stop", "length"].includes(c.finish_reason));
    assert.ok(Array.isArray(c.logprobs.content) && c.logprobs.content.length >= 1);
    for (const t of c.logprobs.content) {
      assert.ok(t.logprob <= 0 && t.top_logprobs.length <= 2 && Array.isArray(t.bytes));
    }
    assert.equal(c.message.content, b.choices[i].message.content, "same seed, same text");
    tokens += c.logprobs.content.length;
  }
  assert.equal(a.usage.total_tokens, a.usage.prompt_tokens + a.usage.completion_tokens);
  return `texts ${JSON.stringify(a.choices.map((c) => c.message.content))}, ` +
         `finish ${a.choices.map((c) => c.finish_reason)}, usage ${JSON.stringify(a.usage)}`;
});

await check("chat: stream with include_usage, n = 2", async () => {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: [{ type: "text", text: "Count" }] }],
    n: 2,
    max_tokens: 6,
    stream: true,
    stream_options: { include_usage: true },
    ignore_eos: true,
  });
  const text = ["", ""];
  let usage = null;
  let finishes = 0;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0);
      usage = chunk.usage;
      continue;
    }
    for (const c of chunk.choices) {
      if (c.delta.content) text[c.index] += c.delta.content;
      if (c.finish_reason) finishes++;
    }
  }
  assert.equal(finishes, 2);
  assert.ok(usage, "no usage chunk");
  assert.equal(usage.completion_tokens, 12);
  return `${chunks} chunks, usage ${JSON.stringify(usage)}`;
});

await check("completions: list of prompts, n, logprobs, echo-free", async () => {
  const r = await client.completions.create({
    model,
    prompt: ["def f(x):", "import os"],
    n: 2,
    max_tokens: 5,
    logprobs: 3,
    temperature: 0,
    ignore_eos: true,
  });
  assert.equal(r.choices.length, 4);
  for (const c of r.choices) {
    assert.equal(c.logprobs.tokens.length, 5);
    assert.equal(c.logprobs.token_logprobs.length, 5);
    assert.equal(c.finish_reason, "length");
  }
  // Greedy: the n choices of a prompt agree.
  assert.equal(r.choices[0].text, r.choices[1].text);
  assert.equal(r.usage.completion_tokens, 20);
  return `texts ${JSON.stringify(r.choices.map((c) => c.text))}`;
});

await check("completions: stream", async () => {
  const stream = await client.completions.create({
    model, prompt: "Once", max_tokens: 4, stream: true, ignore_eos: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) text += c.text;
  }
  assert.equal(usage.completion_tokens, 4);
  return JSON.stringify(text);
});

await check("an unimplemented field is a 400 naming it", async () => {
  try {
    await client.chat.completions.create({
      model, messages: [{ role: "user", content: "x" }],
      tools: [{ type: "function", function: { name: "f", parameters: {} } }],
    });
  } catch (e) {
    assert.equal(e.status, 400);
    assert.equal(e.param, "tools");
    return e.message;
  }
  throw new Error("accepted");
});

await check("an image part is a 400 naming it", async () => {
  try {
    await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "http://x/y.png" } }] }],
    });
  } catch (e) {
    assert.equal(e.status, 400);
    assert.equal(e.param, "messages[0].content[0].type");
    return e.message;
  }
  throw new Error("accepted");
});

const failed = results.filter((r) => !r.ok).length;
console.log(JSON.stringify({ client: `openai ${version}`, checks: results.length, failed }));
process.exit(failed ? 1 : 0);
