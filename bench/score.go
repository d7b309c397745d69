package main

import "errors"

func benchScore(env Env) (Row, error)   { return Row{}, errors.New("not written yet") }
func benchRescore(env Env) (Row, error) { return Row{}, errors.New("not written yet") }
