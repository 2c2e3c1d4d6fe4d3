-- Drives Neovim's built-in LSP client (0.7+) against dist/server.js on a spec, the way a user
-- would, and writes what it saw to $WS_OUT as JSON (server/test/neovim.test.ts checks it).
-- Env: WS_SERVER (dist/server.js), WS_SPEC (the spec), WS_OUT, WS_TYPO (the misspelled key),
-- WS_COMPLETE_KEY (a key to retype and complete), WS_COMPLETE_PREFIX (what is typed of it).
local out = { steps = {}, errors = {} }
local function save() vim.fn.writefile({ vim.fn.json_encode(out) }, os.getenv('WS_OUT')) end
-- Saved after each step, so a hang shows how far it got.
local function step(name, value)
  out.steps[name] = value
  save()
end
local function finish()
  save()
  vim.cmd('qa!')
end
-- Warnings and errors only, in $XDG_CACHE_HOME/nvim/lsp.log (the test reads it): protocol
-- errors, error-level logMessages and anything the server writes on stderr land there.
vim.lsp.set_log_level('WARN')
local messages = {}
vim.notify = function(msg, level) table.insert(messages, { msg = msg, level = level }) end
vim.lsp.handlers['window/showMessage'] = function(_, result) table.insert(messages, { msg = result.message, type = result.type }) end

local ok, err = pcall(function()
  local spec = os.getenv('WS_SPEC')
  vim.cmd('edit ' .. vim.fn.fnameescape(spec))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
  vim.o.completeopt = 'menuone' -- a popup even for one match, so the test sees the items
  local client_id = vim.lsp.start_client({
    name = 'weight-spec',
    cmd = { 'node', os.getenv('WS_SERVER'), '--stdio' },
    -- The folder holding checkpoint, export and prepared folder: Prepare's paths from
    -- export-report.json must lie inside the workspace (issue #28).
    root_dir = os.getenv('WS_ROOT') or vim.fn.fnamemodify(spec, ':h'),
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  local function codes()
    local c = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do table.insert(c, d.user_data and d.user_data.lsp and d.user_data.lsp.code or d.code or '?') end
    table.sort(c)
    return c
  end
  local function has_code(code)
    for _, c in ipairs(codes()) do if c == code then return true end end
    return false
  end
  local function buffer_json()
    local text = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    local okj, decoded = pcall(vim.fn.json_decode, text)
    return okj and decoded or nil, text
  end

  -- 1. diagnostics
  vim.wait(15000, function() return has_code('key-missing') end, 20)
  local diags = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(diags, { code = d.user_data and d.user_data.lsp and d.user_data.lsp.code or d.code, message = d.message, lnum = d.lnum, severity = d.severity })
  end
  step('diagnostics', diags)

  -- 2. hover on the misspelled key
  local typo = os.getenv('WS_TYPO')
  local row, col
  for i, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local s = l:find('"' .. typo .. '"', 1, true)
    if s then row, col = i - 1, s end
  end
  local hover = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover',
    { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, position = { line = row, character = col + 2 } }, 10000)
  local hv = hover and hover[client_id] and hover[client_id].result
  step('hover', hv and hv.contents and (hv.contents.value or hv.contents) or vim.NIL)

  -- 3. the quick fix for key-missing, applied as Neovim applies a code action's edit
  local lsp_diags = vim.lsp.diagnostic.get_line_diagnostics(bufnr, row)
  local actions = vim.lsp.buf_request_sync(bufnr, 'textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = lsp_diags[1] and lsp_diags[1].range or { start = { line = row, character = 0 }, ['end'] = { line = row, character = 0 } },
    context = { diagnostics = lsp_diags },
  }, 10000)
  local list = actions and actions[client_id] and actions[client_id].result or {}
  local titles = {}
  for _, a in ipairs(list) do table.insert(titles, a.title) end
  step('actions', titles)
  if list[1] and list[1].edit then vim.lsp.util.apply_workspace_edit(list[1].edit, client.offset_encoding) end
  vim.wait(10000, function() return not has_code('key-missing') end, 20)
  local fixed = buffer_json()
  step('after_fix', { codes = codes(), valid_json = fixed ~= nil })

  -- 4. completion inside a key: retype a prefix, <C-x><C-o> in insert mode, accept
  local key, prefix = os.getenv('WS_COMPLETE_KEY'), os.getenv('WS_COMPLETE_PREFIX')
  for i, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    local s = l:find('"key": "' .. key .. '"', 1, true)
    if s then
      local start = s + #'"key": "' - 1 -- 0-based column of the key's first character
      vim.api.nvim_buf_set_text(bufnr, i - 1, start, i - 1, start + #key, { prefix })
      row, col = i - 1, start + #prefix
    end
  end
  vim.wait(300) -- the debounced re-check of the edited text
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  -- feedkeys 'x!' stays in Insert mode until <Esc>: a timer watches for the popup menu (the
  -- server's answer), records it and accepts the first item with <C-y>, then leaves.
  local popped, words, waited = false, {}, 0
  local timer
  timer = vim.fn.timer_start(20, function()
    waited = waited + 20
    if vim.fn.pumvisible() == 1 then
      popped = true
      for _, it in ipairs(vim.fn.complete_info({ 'items' }).items or {}) do table.insert(words, it.word) end
      vim.fn.timer_stop(timer)
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<C-y><Esc>', true, false, true), 'n', false)
    elseif waited > 10000 then
      vim.fn.timer_stop(timer)
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<Esc>', true, false, true), 'n', false)
    end
  end, { ['repeat'] = -1 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('i<C-x><C-o>', true, false, true), 'x!', false)
  local completed, text = buffer_json()
  step('completion', {
    popup = popped, words = words, line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1],
    valid_json = completed ~= nil, mode = vim.fn.mode(),
  })
  vim.wait(10000, function() return not has_code('key-missing') end, 20)
  step('after_completion', { codes = codes() })
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)

  -- 5. the Prepare lens, run as a user runs a lens (codelens.run, choosing Prepare)
  vim.lsp.codelens.refresh()
  vim.wait(10000, function() return #vim.lsp.codelens.get(bufnr) > 0 end, 20)
  local lens_titles, lens_commands = {}, {}
  for _, l in ipairs(vim.lsp.codelens.get(bufnr)) do
    table.insert(lens_titles, l.command and l.command.title or '?')
    table.insert(lens_commands, l.command and l.command.command or '?')
  end
  step('lenses', { titles = lens_titles, commands = lens_commands })
  vim.ui.select = function(items, opts, on_choice)
    for i, it in ipairs(items) do
      local label = opts.format_item and opts.format_item(it) or tostring(it)
      if label:find('Prepare', 1, true) then return on_choice(it, i) end
    end
    on_choice(nil, nil)
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.lsp.codelens.run()
  local cleared = vim.wait(60000, function() return #messages > 0 and not has_code('not-prepared') end, 50)
  step('prepare', { cleared = cleared, codes = codes(), messages = messages, edits_since = vim.api.nvim_buf_get_changedtick(bufnr) - tick })
end)
if not ok then table.insert(out.errors, tostring(err)) end
finish()
