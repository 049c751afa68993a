package github

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// Source names of RequiredContexts.
const (
	SourceBranchProtection = "branch-protection"
	SourceRulesets         = "rulesets"
)

// Source is what one endpoint said about the required contexts.
type Source struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	// Known is false when the endpoint refused (403/404): the contexts it
	// would have listed are unknown, which is never the same as none.
	Known  bool     `json:"known"`
	Reason string   `json:"reason,omitempty"`
	Names  []string `json:"names"`
}

// Contexts are the status-check contexts the base branch requires.
type Contexts struct {
	// Names is the sorted union over the sources that answered.
	Names []string `json:"names"`
	// Known is true only when every source answered; otherwise Names may be
	// incomplete and the caller must treat the requirement as unknown.
	Known   bool     `json:"known"`
	Sources []Source `json:"sources"`
}

// RequiredContexts reads the contexts branch must pass from branch protection
// (GET a branch: protection.required_status_checks, visible with
// contents:read) and from rulesets (rules of type required_status_checks). A
// 403 or 404 from either makes that source unknown, recorded with the reason;
// any other failure is an RM-GITHUB-002 error.
func (c *Client) RequiredContexts(ctx context.Context, owner, repo, branch string) (Contexts, error) {
	ctx = c.withRetryDeadline(ctx, c.clock.Now().Add(c.retryWindow))
	prot, err := c.branchProtection(ctx, owner, repo, branch)
	if err != nil {
		return Contexts{}, err
	}
	rules, err := c.rulesetContexts(ctx, owner, repo, branch)
	if err != nil {
		return Contexts{}, err
	}
	out := Contexts{Known: true, Sources: []Source{prot, rules}, Names: []string{}}
	for _, s := range out.Sources {
		out.Known = out.Known && s.Known
		out.Names = append(out.Names, s.Names...)
	}
	slices.Sort(out.Names)
	out.Names = slices.Compact(out.Names)
	return out, nil
}

func unknown(s Source, status int) Source {
	s.Known = false
	s.Names = []string{}
	s.Reason = fmt.Sprintf("HTTP %d: the token cannot see this endpoint, so its required contexts are unknown", status)
	return s
}

func (c *Client) branchProtection(ctx context.Context, owner, repo, branch string) (Source, error) {
	s := Source{Name: SourceBranchProtection, Endpoint: "GET /repos/{owner}/{repo}/branches/{branch}", Known: true, Names: []string{}}
	// One redirect: GitHub answers 301 for a renamed branch.
	b, resp, err := c.gh.Repositories.GetBranch(ctx, owner, repo, branch, 1)
	if st := statusOf(resp); st == http.StatusForbidden || st == http.StatusNotFound {
		return unknown(s, st), nil
	}
	if err != nil {
		return s, apiError(err, "reading branch protection of %s/%s@%s", owner, repo, branch)
	}
	if b.Protection == nil {
		if b.GetProtected() {
			// The branch is protected but the answer did not say how; treating
			// that as "no required contexts" would be reading absence as none.
			s.Known = false
			s.Reason = "the branch is protected but the answer carries no protection details"
		}
		return s, nil
	}
	rsc := b.Protection.RequiredStatusChecks
	if rsc == nil {
		return s, nil
	}
	// Contexts is the legacy list and Checks its replacement; GitHub fills
	// both, and either may be the only one on older servers.
	if rsc.Contexts != nil {
		s.Names = append(s.Names, *rsc.Contexts...)
	}
	if rsc.Checks != nil {
		for _, ch := range *rsc.Checks {
			if ch != nil {
				s.Names = append(s.Names, ch.Context)
			}
		}
	}
	slices.Sort(s.Names)
	s.Names = slices.Compact(s.Names)
	return s, nil
}

// requiredContextsOfRules extracts the required status check contexts from
// one page of rules-for-branch entries; other rule types are skipped.
func requiredContextsOfRules(raw []json.RawMessage) ([]string, error) {
	var names []string
	for _, m := range raw {
		var r rule
		if err := json.Unmarshal(m, &r); err != nil {
			return nil, err
		}
		if r.Type != "required_status_checks" {
			continue
		}
		for _, ch := range r.Parameters.RequiredStatusChecks {
			names = append(names, ch.Context)
		}
	}
	return names, nil
}

// rule is the part of a rules-for-branch entry this package needs. It is
// decoded here rather than through go-github's RepositoryRule, whose
// UnmarshalJSON in v62 fails on any rule type it does not know (GitHub adds
// new ones, e.g. file_path_restriction), which would turn a readable answer
// into an error.
type rule struct {
	Type       string `json:"type"`
	Parameters struct {
		RequiredStatusChecks []struct {
			Context string `json:"context"`
		} `json:"required_status_checks"`
	} `json:"parameters"`
}

func (c *Client) rulesetContexts(ctx context.Context, owner, repo, branch string) (Source, error) {
	s := Source{Name: SourceRulesets, Endpoint: "GET /repos/{owner}/{repo}/rules/branches/{branch}", Known: true, Names: []string{}}
	// go-github v62's GetRulesForBranch neither paginates (GitHub pages this
	// endpoint, 30 by default) nor escapes the branch name, so the request is
	// built here.
	page := 1
	for {
		u := fmt.Sprintf("repos/%s/%s/rules/branches/%s?per_page=100&page=%d",
			url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(branch), page)
		req, err := c.gh.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return s, apiError(err, "building rules request for %s/%s@%s", owner, repo, branch)
		}
		var raw []json.RawMessage
		resp, err := c.gh.Do(ctx, req, &raw)
		if st := statusOf(resp); st == http.StatusForbidden || st == http.StatusNotFound {
			return unknown(s, st), nil
		}
		if err != nil {
			return s, apiError(err, "reading rulesets of %s/%s@%s", owner, repo, branch)
		}
		names, err := requiredContextsOfRules(raw)
		if err != nil {
			return s, apiError(err, "decoding a rule of %s/%s@%s", owner, repo, branch)
		}
		s.Names = append(s.Names, names...)
		if resp.NextPage == 0 {
			break
		}
		page = resp.NextPage
	}
	slices.Sort(s.Names)
	s.Names = slices.Compact(s.Names)
	return s, nil
}
