/**
 * Every family row, one line per family file: the one place a new family is added (its own
 * `families/<name>.ts` exports its row). The registry lists them from this module's namespace,
 * whose exports come in name order (registry.ts).
 */
export { codegenFamily } from './codegen';
export { cohereFamily } from './cohere';
export { deepseekV3Family } from './deepseek-v3';
export { falconFamily } from './falcon';
export { gemma2Family } from './gemma2';
export { gemma3Family } from './gemma3';
export { gemmaFamily } from './gemma';
export { glm4MoeFamily } from './glm4-moe';
export { gpt2Family } from './gpt2';
export { gptBigcodeFamily } from './gpt-bigcode';
export { gptOssFamily } from './gpt-oss';
export { gptjFamily } from './gptj';
export { graniteFamily } from './granite';
export { graniteMoeFamily } from './granitemoe';
export { grok1Family } from './grok1';
export { llama4Family, llama4TextFamily } from './llama4';
export { llamaFamily } from './llama';
export { mistralFamily } from './mistral';
export { mixtralFamily } from './mixtral';
export { mptFamily } from './mpt';
export { olmo2Family } from './olmo2';
export { phi3Family } from './phi3';
export { phiFamily } from './phi';
export { qwen2Family } from './qwen2';
export { qwen35MoeFamily } from './qwen3-5-moe';
export { qwen3Family } from './qwen3';
export { qwen3MoeFamily } from './qwen3-moe';
export { stablelmFamily } from './stablelm';
export { starcoder2Family } from './starcoder2';
