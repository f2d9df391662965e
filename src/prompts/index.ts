// Suggested prompts: what the rest of the service may use of this domain.
export { seedDefaultPrompts } from './defaults.js';
export {
  createPrompt,
  deletePrompt,
  effectivePrompts,
  listDefaultPrompts,
  listPrompts,
  type Prompt,
  type PromptOwner,
  replaceDefaultPrompts,
  SORT_ORDER_MAX,
  SORT_ORDER_MIN,
  TEXT_MAX_CHARACTERS,
  updatePrompt,
} from './prompts.js';
