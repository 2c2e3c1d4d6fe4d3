;;; eglot-check.el --- drives Debian's Emacs + eglot against dist/server.js  -*- lexical-binding: t -*-
;; Loaded by `emacs -nw -l' in a fresh HOME whose init.el is the README's snippet (Debian's
;; site-start activates elpa-eglot), inside a tmux pane, so the real command loop runs: keys
;; are typed into the terminal (tmux send-keys); idle timers (eglot's didChange, Flymake,
;; ElDoc) fire as for a user. Each step waits for its condition by polling with a deadline,
;; then the next runs. What it saw goes to $WS_OUT as JSON (server/test/emacs.test.ts checks it).
;; Env: WS_TMUX (tmux's socket; the session is "ws"), WS_SPEC, WS_OUT, WS_TYPO,
;; WS_COMPLETE_KEY, WS_COMPLETE_PREFIX, WS_DOT_PREFIX, WS_SHARD.
(require 'cl-lib)
(require 'json)
(require 'subr-x)
(setq make-backup-files nil create-lockfiles nil auto-save-default nil inhibit-startup-screen t)

(defvar ws-steps (make-hash-table :test 'equal))
(defvar ws-errors nil)
(defvar ws-queue nil "The remaining steps: functions run in order.")
(defvar ws-buffer nil "The spec's buffer.")

(defun ws-env (name) (or (getenv name) (error "%s is not set" name)))

(defun ws-save ()
  (let ((out (make-hash-table :test 'equal)))
    (puthash "steps" ws-steps out)
    (puthash "errors" (vconcat (reverse ws-errors)) out)
    (with-temp-file (ws-env "WS_OUT") (insert (json-serialize out)))))

(defun ws-step (name value)
  "Records VALUE under NAME (saved at once, so a hang shows how far it got)."
  (puthash name value ws-steps)
  (ws-save))

(defun ws-eglot-buffers (kind)
  "The text of eglot's KIND buffers (\"stderr\": the server's stderr; \"events\": the JSON-RPC log)."
  (mapconcat (lambda (b) (with-current-buffer b (buffer-string)))
             (cl-remove-if-not (lambda (b) (string-match-p (format "\\`\\*EGLOT.*%s\\*\\'" kind) (buffer-name b)))
                               (buffer-list))
             ""))

(defun ws-finish ()
  (puthash "messages" (with-current-buffer "*Messages*" (buffer-string)) ws-steps)
  (puthash "stderr" (ws-eglot-buffers "stderr") ws-steps)
  (puthash "events" (ws-eglot-buffers "events") ws-steps)
  (puthash "done" t ws-steps)
  (ws-save)
  (kill-emacs 0))

(defun ws-next ()
  "Runs the next step from a timer (outside the command that finished)."
  (run-with-timer 0 nil
                  (lambda ()
                    (if (null ws-queue)
                        (ws-finish)
                      (condition-case err
                          (let ((step (pop ws-queue)))
                            (if (buffer-live-p ws-buffer) (with-current-buffer ws-buffer (funcall step)) (funcall step)))
                        (error (push (format "%S" err) ws-errors) (ws-next)))))))

(defun ws-wait (what pred &optional timeout)
  "Polls PRED every 50 ms; then the next step. After TIMEOUT seconds (default 20) records WHAT as an error."
  (let ((deadline (+ (float-time) (or timeout 20))) timer)
    (setq timer (run-with-timer
                 0.05 0.05
                 (lambda ()
                   (let ((ok (condition-case nil
                                 (if (buffer-live-p ws-buffer) (with-current-buffer ws-buffer (funcall pred)) (funcall pred))
                               (error nil))))
                     (when (or ok (> (float-time) deadline))
                       (cancel-timer timer)
                       (unless ok (push (format "timed out waiting for %s" what) ws-errors))
                       (ws-next))))))))

(defun ws-keys (&rest keys)
  "Types KEYS into Emacs's terminal (tmux send-keys: real input, as a user's): each a tmux key
name (\"M-x\", \"C-M-i\", \"Enter\") or, as a vector holding one string, literal text."
  (dolist (k keys)
    (let ((args (if (vectorp k) (list "-l" (aref k 0)) (list k))))
      (unless (eql 0 (apply #'call-process "tmux" nil nil nil "-S" (ws-env "WS_TMUX") "send-keys" "-t" "ws" args))
        (error "tmux send-keys %S failed" args)))))

(defun ws-codes ()
  "The codes of the diagnostics Flymake shows in the spec's buffer, sorted."
  (with-current-buffer ws-buffer
    (sort (mapcar (lambda (d)
                    (let ((lsp (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data d)))))
                      (format "%s" (plist-get lsp :code))))
                  (flymake-diagnostics))
          #'string<)))

(defun ws-prompt ()
  "The prompt of the active minibuffer, or \"\"."
  (let ((w (active-minibuffer-window)))
    (or (and w (with-current-buffer (window-buffer w) (minibuffer-prompt))) "")))

(defun ws-has-code (code) (member code (ws-codes)))

(defun ws-valid-json ()
  (condition-case nil (progn (json-parse-string (buffer-string)) t) (error :false)))

(defun ws-line () (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(defun ws-goto-key (key &optional offset)
  "Moves point OFFSET characters into the `location.key' string holding exactly KEY."
  (goto-char (point-min))
  (search-forward (concat "\"key\": \"" key "\""))
  (goto-char (+ (match-beginning 0) (length "\"key\": \"") (or offset 0))))

(defun ws-retype (key typed)
  "Replaces the string KEY by TYPED, point after it (what typing it leaves)."
  (ws-goto-key key)
  (delete-region (point) (+ (point) (length key)))
  (insert typed))

(defun ws-company-pick ()
  "Completes as company-capf or corfu do: the candidates of the capf table for the text in
its bounds, the chosen one inserted over the bounds, then the exit function with `finished'."
  (interactive)
  (pcase-let* ((`(,start ,end ,table . ,props) (run-hook-wrapped 'completion-at-point-functions
                                                                 (lambda (f) (funcall f))))
               (key (ws-env "WS_COMPLETE_KEY"))
               (cands (all-completions (buffer-substring-no-properties start end) table))
               (pick (cl-find-if (lambda (c) (equal (plist-get (get-text-property 0 'eglot--lsp-item c) :label) key)) cands)))
    (ws-step "company_candidates" (vconcat (mapcar #'substring-no-properties cands)))
    (when pick
      (delete-region start end)
      (goto-char start)
      (insert pick)
      (funcall (plist-get props :exit-function) pick 'finished))))

(defvar ws-tick nil)
(defun ws-prepare ()
  "Runs Prepare through workspace/executeCommand (eglot 1.9 shows no lenses) and records the
diagnostics at the moment the reply came, before Emacs reads anything more from the server."
  (interactive)
  (condition-case err
      (let ((jsonrpc-default-request-timeout 300)) ; a real prepare takes minutes; jsonrpc's default is 10 s
        (ws-step "prepare_result"
                 (format "%S" (eglot-execute-command (eglot-current-server) 'weight-spec.server.prepare
                                                     (vector (eglot--path-to-uri buffer-file-name))))))
    (error (push (format "prepare: %S" err) ws-errors)))
  (ws-step "prepare_reply_codes" (vconcat (ws-codes))))

(setq
 ws-queue
 (list
  ;; 1. Open the spec as a user does: the mode from auto-mode-alist, eglot-ensure from its hook.
  (lambda ()
    (ws-keys "C-x" "C-f" (vector (file-name-nondirectory (ws-env "WS_SPEC"))) "Enter")
    (ws-wait "eglot managing the spec's buffer"
             (lambda () (and (setq ws-buffer (get-file-buffer (ws-env "WS_SPEC"))) (eglot-managed-p))) 30))
  (lambda ()
    ;; Flymake starts after the next command when eglot connected within this one (eglot 1.9
    ;; waits up to 3 s for the server): the user's next key, here a harmless C-l.
    (ws-keys "C-l")
    (ws-wait "key-missing" (lambda () (ws-has-code "key-missing")) 30))
  (lambda ()
    (ws-step "mode" (symbol-name major-mode))
    (ws-step "managed" (if (eglot-managed-p) t :false))
    (ws-step "diagnostics"
             (vconcat (mapcar (lambda (d) (let ((lsp (cdr (assoc 'eglot-lsp-diag (flymake-diagnostic-data d)))))
                                            (list :code (format "%s" (plist-get lsp :code)) :text (flymake-diagnostic-text d))))
                              (flymake-diagnostics))))
    ;; 2. Hover (ElDoc) on the misspelled key.
    (ws-goto-key (ws-env "WS_TYPO") 2)
    (ws-keys "M-x" ["eldoc"] "Enter")
    (ws-wait "hover" (lambda () (and (buffer-live-p eldoc--doc-buffer)
                                     (string-match-p (regexp-quote (ws-env "WS_TYPO"))
                                                     (with-current-buffer eldoc--doc-buffer (buffer-string)))))))
  (lambda ()
    (ws-step "hover" (with-current-buffer eldoc--doc-buffer (buffer-substring-no-properties (point-min) (point-max))))
    ;; 3. The quick fix at the misspelled key.
    (ws-goto-key (ws-env "WS_TYPO") 2)
    ;; M-x eglot-code-actions (eglot 1.9's eglot-code-action-quickfix only returns the actions
    ;; when called as a command: it does not pass its `interactive' flag on). Several fixes ("did
    ;; you mean" lists three keys): eglot asks, offering the preferred one as the default.
    (ws-keys "M-x" ["eglot-code-actions"] "Enter")
    (ws-wait "eglot's choice of fixes" (lambda () (string-match-p "Pick an action" (ws-prompt)))))
  (lambda ()
    (ws-step "quickfix_prompt" (ws-prompt))
    (ws-keys "Enter")
    (ws-wait "the quick fix" (lambda () (and (not (ws-has-code "key-missing")) (ws-codes)))))
  (lambda ()
    (ws-step "after_fix" (list :codes (vconcat (ws-codes)) :valid_json (ws-valid-json)
                               :typo_left (if (search-forward (ws-env "WS_TYPO") nil t) t :false)))
    ;; 4a. Completion picked as company/corfu pick, inside a retyped key.
    (ws-retype (ws-env "WS_COMPLETE_KEY") (ws-env "WS_COMPLETE_PREFIX"))
    (ws-keys "M-x" ["ws-company-pick"] "Enter")
    (ws-wait "the picked completion" (lambda () (gethash "company_candidates" ws-steps)) 20))
  (lambda ()
    (ws-step "company" (list :line (ws-line) :valid_json (ws-valid-json)))
    (ws-wait "diagnostics after the pick" (lambda () (equal (ws-codes) '("not-prepared")))))
  (lambda ()
    ;; 4b. Emacs's own C-M-i right after "mlp.": no candidate is unique, nothing inserted.
    (ws-retype (ws-env "WS_COMPLETE_KEY") (ws-env "WS_DOT_PREFIX"))
    (ws-keys "C-M-i")
    (ws-wait "*Completions*" (lambda () (and (get-buffer "*Completions*") (get-buffer-window "*Completions*")))))
  (lambda ()
    (ws-step "cmi_dot" (list :line (ws-line)
                             :listed (with-current-buffer "*Completions*" (buffer-substring-no-properties (point-min) (point-max)))))
    ;; Then the first letter of the wanted part and C-M-i again: one candidate, completed.
    (let ((rest (substring (ws-env "WS_COMPLETE_KEY") (length (ws-env "WS_DOT_PREFIX")))))
      (ws-keys (vector (substring rest 0 1)) "C-M-i"))
    (ws-wait "C-M-i completing" (lambda () (string-match-p (regexp-quote (concat "\"" (ws-env "WS_COMPLETE_KEY") "\"")) (ws-line)))))
  (lambda ()
    (ws-step "cmi" (list :line (ws-line) :valid_json (ws-valid-json)))
    (ws-wait "diagnostics after C-M-i" (lambda () (equal (ws-codes) '("not-prepared")))))
  (lambda ()
    ;; 5. Prepare through workspace/executeCommand; the warnings must be gone with the reply.
    (setq ws-tick (buffer-chars-modified-tick))
    (ws-keys "M-x" ["ws-prepare"] "Enter")
    (ws-wait "the Prepare reply" (lambda () (gethash "prepare_reply_codes" ws-steps)) 300))
  (lambda ()
    (ws-step "prepare" (list :codes (vconcat (ws-codes)) :edits_since (- (buffer-chars-modified-tick) ws-tick)
                             :message (if (with-current-buffer "*Messages*"
                                            (save-excursion (goto-char (point-min)) (search-forward "Prepared " nil t)))
                                          t :false)))
    ;; 6. A shard of the prepared folder renamed behind Emacs's back: noticed without an edit.
    (rename-file (ws-env "WS_SHARD") (concat (ws-env "WS_SHARD") ".moved"))
    ;; The shard missing, and its folder incomplete. (A check already under way when the file
    ;; moved may publish a mixed view first; the watcher's re-check follows it.)
    (ws-wait "the renamed shard" (lambda () (equal (ws-codes) '("not-prepared" "prepared-incomplete"))) 20))
  (lambda ()
    (ws-step "renamed" (list :codes (vconcat (ws-codes)) :edits_since (- (buffer-chars-modified-tick) ws-tick)
                             :texts (vconcat (mapcar #'flymake-diagnostic-text (flymake-diagnostics)))))
    (ws-next))))

;; Start once the command loop runs.
(run-with-timer 0.1 nil #'ws-next)
;;; eglot-check.el ends here
