// An AgentAdapter for any OpenAI-compatible chat-completions endpoint (llama.cpp server, vLLM,
// Ollama's /v1, LocalAI…) configured by URL (sops/RUNTIME.md, "Steps that need a model"). The model may call the step's
// tools (function calling); every call goes back through the engine's checks. Replies never
// pass gates: they only become a step output or a yes/no answer.
import { fail } from '../../errors/codes.ts'
import { errorText } from '../../errors/text.ts'
import type { Json } from '../../sops/types.ts'
import type { AgentAdapter, AgentDecideRequest, AgentResult, AgentStepRequest } from './types.ts'

export interface OpenAiAgentOptions {
  /** Base URL (`http://127.0.0.1:8080/v1`) or the full `…/chat/completions` URL. */
  url: string
  model: string
  apiKey?: string
  /** Tool-call rounds per step before giving up (default 8). */
  maxRounds?: number
  /** Per-request timeout in ms (default 60 000). */
  timeoutMs?: number
  fetch?: typeof fetch
}

interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string | null
  tool_calls?: ToolCall[]
  tool_call_id?: string
}
interface ToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export function completionsUrl(url: string): string {
  const u = url.replace(/\/+$/, '')
  return u.endsWith('/chat/completions') ? u : `${u}/chat/completions`
}

function asOutput(text: string): Json {
  try {
    return JSON.parse(text) as Json
  } catch {
    return text
  }
}

export function createOpenAiAgent(opts: OpenAiAgentOptions): AgentAdapter {
  const endpoint = completionsUrl(opts.url)
  const doFetch = opts.fetch ?? fetch
  const maxRounds = opts.maxRounds ?? 8

  async function complete(body: object, signal: AbortSignal): Promise<AgentResult<ChatMessage>> {
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? 60_000)
    let res: Response
    try {
      res = await doFetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: opts.model, temperature: 0, ...body }),
        signal: AbortSignal.any([signal, timeout]),
      })
    } catch (err) {
      const code = timeout.aborted ? 'TIMEOUT' : signal.aborted ? 'CANCELLED' : 'UNREACHABLE'
      return fail(code, `agent endpoint ${endpoint} unreachable: ${errorText(err)}`)
    }
    const text = await res.text().catch(() => '')
    if (!res.ok)
      return fail('UPSTREAM_FAILED', `agent endpoint answered ${res.status}: ${text.slice(0, 200)}`)
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return fail('UPSTREAM_FAILED', 'agent endpoint sent a reply that is not JSON')
    }
    const msg = (parsed as { choices?: { message?: ChatMessage }[] }).choices?.[0]?.message
    if (!msg || typeof msg !== 'object')
      return fail('UPSTREAM_FAILED', 'agent reply has no choices[0].message')
    return { ok: true, value: msg }
  }

  return {
    async runStep(req: AgentStepRequest): Promise<AgentResult<Json>> {
      const messages: ChatMessage[] = [
        {
          role: 'system',
          content:
            `You run step ${req.step.number} of the procedure "${req.sop.name}": ${req.sop.description}\n` +
            'Use the tools offered when the step needs them. When done, reply with the step output: JSON when it is data, else plain text.',
        },
        {
          role: 'user',
          content: [
            `Step ${req.step.number}: ${req.step.title}`,
            req.step.body,
            req.step.prompt ?? '',
            `Input: ${JSON.stringify(req.input)}`,
          ]
            .filter((s) => s !== '')
            .join('\n\n'),
        },
      ]
      const tools = req.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      }))
      for (let round = 0; round < maxRounds; round++) {
        const r = await complete({ messages, ...(tools.length > 0 ? { tools } : {}) }, req.signal)
        if (!r.ok) return r
        const msg = r.value
        const calls = Array.isArray(msg.tool_calls) ? msg.tool_calls : []
        if (calls.length === 0)
          return { ok: true, value: asOutput(typeof msg.content === 'string' ? msg.content : '') }
        messages.push({ role: 'assistant', content: msg.content ?? null, tool_calls: calls })
        for (const c of calls) {
          let args: Json
          try {
            args = JSON.parse(c.function?.arguments || '{}') as Json
          } catch {
            messages.push({
              role: 'tool',
              tool_call_id: c.id,
              content: JSON.stringify({ error: 'arguments are not valid JSON' }),
            })
            continue
          }
          const out = await req.callTool(String(c.function?.name ?? ''), args)
          messages.push({
            role: 'tool',
            tool_call_id: c.id,
            content: JSON.stringify(out.ok ? out.output : { error: out.error }),
          })
        }
      }
      return fail('UPSTREAM_FAILED', `the model was still calling tools after ${maxRounds} rounds`)
    },

    async decide(req: AgentDecideRequest): Promise<AgentResult<boolean>> {
      const r = await complete(
        {
          messages: [
            {
              role: 'system',
              content: `You decide for the procedure "${req.sop.name}": ${req.sop.description}\nAnswer with exactly one word: yes or no.`,
            },
            {
              role: 'user',
              content: `Question: ${req.question}\nTriggering event (${req.trigger.type} from ${req.trigger.source}): ${typeof req.trigger.payload === 'string' ? req.trigger.payload : JSON.stringify(req.trigger.payload)}`,
            },
          ],
        },
        req.signal,
      )
      if (!r.ok) return r
      const text = (typeof r.value.content === 'string' ? r.value.content : '').trim()
      if (/^(yes|true)\b/i.test(text)) return { ok: true, value: true }
      if (/^(no|false)\b/i.test(text)) return { ok: true, value: false }
      return fail('UPSTREAM_FAILED', `the model's answer was neither yes nor no: "${text.slice(0, 80)}"`)
    },
  }
}
